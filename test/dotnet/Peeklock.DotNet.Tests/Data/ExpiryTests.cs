using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>
/// What a received message says about its expiry: Service Bus gives a message without a TTL the entity's
/// DefaultMessageTimeToLive and cuts a longer one down to it at enqueue, so TimeToLive is the effective TTL and
/// ExpiresAt is EnqueuedTime + that TTL (issue 38, item 5). The queue and the subscription each have PT1H.
/// </summary>
public class ExpiryTests
{
    private static readonly TimeSpan Default = TimeSpan.FromHours(1);

    private static ServiceBusMessage[] Messages() => new[]
    {
        new ServiceBusMessage("a") { MessageId = "none" },
        new ServiceBusMessage("b") { MessageId = "longer", TimeToLive = TimeSpan.FromHours(2) },
        new ServiceBusMessage("c") { MessageId = "shorter", TimeToLive = TimeSpan.FromMinutes(10) },
    };

    private static void AssertEffective(IEnumerable<ServiceBusReceivedMessage> messages, string how)
    {
        var byId = messages.ToDictionary(m => m.MessageId);
        Assert.Equal(3, byId.Count);
        foreach (var (id, ttl) in new[] { ("none", Default), ("longer", Default), ("shorter", TimeSpan.FromMinutes(10)) })
        {
            var m = byId[id];
            Assert.True(ttl == m.TimeToLive, $"{how} {id}: TimeToLive {m.TimeToLive}, expected {ttl}");
            Assert.True(m.EnqueuedTime + ttl == m.ExpiresAt, $"{how} {id}: ExpiresAt {m.ExpiresAt:o}, expected EnqueuedTime {m.EnqueuedTime:o} + {ttl}");
        }
    }

    [Fact]
    public async Task ReportsTheEffectiveTimeToLiveOnAQueue()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("data-expiry");
        await sender.SendMessagesAsync(Messages());
        await using var receiver = client.CreateReceiver("data-expiry");
        AssertEffective(await receiver.PeekMessagesAsync(3), "peeked");
        var got = await Receive.AtLeast(receiver, 3);
        AssertEffective(got, "received");

        // A dead-lettered copy keeps what it reported in its queue (a dead-letter queue itself ignores TTL).
        var longer = got.Single(m => m.MessageId == "longer");
        await receiver.DeadLetterMessageAsync(longer, "checked", "expiry reported");
        foreach (var m in got.Where(m => m != longer)) await receiver.CompleteMessageAsync(m);
        await using var dlq = Receive.DeadLetters(client, "data-expiry");
        var dead = await Receive.One(dlq);
        Assert.Equal(Default, dead.TimeToLive);
        Assert.Equal(dead.EnqueuedTime + Default, dead.ExpiresAt);
        await dlq.CompleteMessageAsync(dead);
    }

    [Fact]
    public async Task ReportsTheSubscriptionsDefaultOnASubscription()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("data-topic-expiry");
        await sender.SendMessagesAsync(Messages());
        await using var receiver = client.CreateReceiver("data-topic-expiry", "s");
        var got = await Receive.AtLeast(receiver, 3);
        AssertEffective(got, "received");
        foreach (var m in got) await receiver.CompleteMessageAsync(m);
    }

    [Fact]
    public async Task ReportsTheEffectiveTimeToLiveOfADeferredMessage()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("data-expiry-defer");
        await sender.SendMessageAsync(new ServiceBusMessage("d") { MessageId = "deferred", TimeToLive = TimeSpan.FromHours(3) });
        await using var receiver = client.CreateReceiver("data-expiry-defer");
        var m = await Receive.One(receiver);
        await receiver.DeferMessageAsync(m);
        var back = await receiver.ReceiveDeferredMessageAsync(m.SequenceNumber);
        Assert.Equal(Default, back.TimeToLive);
        Assert.Equal(back.EnqueuedTime + Default, back.ExpiresAt);
        await receiver.CompleteMessageAsync(back);
    }
}
