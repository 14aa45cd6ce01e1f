using System.Diagnostics;
using Azure.Messaging.ServiceBus;
using Azure.Messaging.ServiceBus.Administration;
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>Auto-forwarding, and the errors a .NET user meets first: a missing entity and a wrong key.</summary>
public class RoutingAndErrorTests
{
    private static readonly ServiceBusRetryOptions NoRetries = new() { MaxRetries = 0, TryTimeout = TimeSpan.FromSeconds(10) };

    [Fact]
    public async Task ForwardsFromTheSourceQueueToItsForwardTo()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-fwd-src").SendMessageAsync(new ServiceBusMessage("fwd") { MessageId = "fwd" });
        await using var receiver = client.CreateReceiver("data-fwd-dst");
        var msg = await Receive.One(receiver);
        Assert.Equal("fwd", msg.MessageId);
        await receiver.CompleteMessageAsync(msg);
        await using var source = client.CreateReceiver("data-fwd-src");
        Assert.Null(await source.PeekMessageAsync());
    }

    [Fact]
    public async Task ReportsAMissingEntityAsMessagingEntityNotFound()
    {
        await using var client = Broker.Client(new ServiceBusClientOptions { RetryOptions = NoRetries });
        await using var sender = client.CreateSender("data-no-such-queue");
        var send = await Assert.ThrowsAsync<ServiceBusException>(() => sender.SendMessageAsync(new ServiceBusMessage("x")));
        Assert.True(send.Reason == ServiceBusFailureReason.MessagingEntityNotFound, send.ToString());
        await using var receiver = client.CreateReceiver("data-no-such-queue");
        var receive = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(2)));
        Assert.True(receive.Reason == ServiceBusFailureReason.MessagingEntityNotFound, receive.ToString());
        var peek = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.PeekMessageAsync());
        Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, peek.Reason);
        await using var rules = client.CreateRuleManager("data-topic", "no-such-subscription");
        var rule = await Assert.ThrowsAsync<ServiceBusException>(() => rules.CreateRuleAsync("r", new SqlRuleFilter("1=1")));
        Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, rule.Reason);
    }

    [Fact]
    public async Task RefusesAWrongKeyQuicklyWithUnauthorizedAccess()
    {
        var wrong = Broker.ConnectionString.Replace($"SharedAccessKey={Broker.Key}", "SharedAccessKey=not-the-key");
        Assert.NotEqual(Broker.ConnectionString, wrong);
        await using var client = new ServiceBusClient(wrong, new ServiceBusClientOptions { RetryOptions = NoRetries });
        await using var sender = client.CreateSender("data-auth");
        var clock = Stopwatch.StartNew();
        await Assert.ThrowsAsync<UnauthorizedAccessException>(() => sender.SendMessageAsync(new ServiceBusMessage("x")));
        Assert.True(clock.Elapsed < TimeSpan.FromSeconds(5), $"took {clock.Elapsed}");
        await using var receiver = client.CreateReceiver("data-auth");
        clock.Restart();
        await Assert.ThrowsAsync<UnauthorizedAccessException>(() => receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(2)));
        Assert.True(clock.Elapsed < TimeSpan.FromSeconds(5), $"took {clock.Elapsed}");
        // Nothing reached the queue.
        await using var good = Broker.Client();
        await using var check = good.CreateReceiver("data-auth");
        Assert.Null(await check.PeekMessageAsync());
    }
}
