using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>Peek-lock settlement on the receive link and through $management: complete, abandon, dead-letter, defer, renew.</summary>
public class SettlementTests
{
    [Fact]
    public async Task CompletesAPeekLockedMessage()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-complete").SendMessageAsync(new ServiceBusMessage("c") { MessageId = "c1" });
        await using var receiver = client.CreateReceiver("data-complete");
        var msg = await Receive.One(receiver);
        Assert.Equal(ServiceBusReceiveMode.PeekLock, receiver.ReceiveMode);
        Assert.NotEqual(default, msg.LockToken);
        await receiver.CompleteMessageAsync(msg);
        Assert.Null(await receiver.PeekMessageAsync());
        // Completing again: the lock is gone with the message.
        var again = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.CompleteMessageAsync(msg));
        Assert.Equal(ServiceBusFailureReason.MessageLockLost, again.Reason);
    }

    [Fact]
    public async Task AbandonsWithPropertiesThatTheNextDeliveryCarries()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-abandon").SendMessageAsync(new ServiceBusMessage("a") { MessageId = "a1", ApplicationProperties = { ["kept"] = "yes" } });
        await using var receiver = client.CreateReceiver("data-abandon");
        var first = await Receive.One(receiver);
        Assert.Equal(1, first.DeliveryCount);
        await receiver.AbandonMessageAsync(first, new Dictionary<string, object> { ["reason"] = "retry", ["attempt"] = 1 });
        var second = await Receive.One(receiver);
        Assert.Equal("a1", second.MessageId);
        Assert.Equal(2, second.DeliveryCount);
        Assert.Equal("retry", second.ApplicationProperties["reason"]);
        Assert.Equal(1, second.ApplicationProperties["attempt"]);
        Assert.Equal("yes", second.ApplicationProperties["kept"]);
        await receiver.AbandonMessageAsync(second);
        var third = await Receive.One(receiver);
        Assert.Equal(3, third.DeliveryCount);
        await receiver.CompleteMessageAsync(third);
    }

    [Fact]
    public async Task DeadLettersWithReasonAndDescriptionIntoTheDeadLetterQueue()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("data-deadletter");
        await sender.SendMessagesAsync(new[] { new ServiceBusMessage("d1") { MessageId = "d1" }, new ServiceBusMessage("d2") { MessageId = "d2" }, new ServiceBusMessage("d3") { MessageId = "d3" } });
        await using var receiver = client.CreateReceiver("data-deadletter");
        var got = await Receive.AtLeast(receiver, 3);
        Assert.Equal(3, got.Count);
        await receiver.DeadLetterMessageAsync(got[0], "BadOrder", "the sku is missing");
        await receiver.DeadLetterMessageAsync(got[1], new Dictionary<string, object> { ["note"] = "with props" }, "Other", "described");
        await receiver.DeadLetterMessageAsync(got[2]);
        Assert.Null(await receiver.PeekMessageAsync());

        await using var dlq = Receive.DeadLetters(client, "data-deadletter");
        Assert.Equal("data-deadletter/$DeadLetterQueue", dlq.EntityPath);
        var dead = (await Receive.AtLeast(dlq, 3)).OrderBy(m => m.MessageId).ToList();
        Assert.Equal(new[] { "d1", "d2", "d3" }, dead.Select(m => m.MessageId));
        Assert.Equal("BadOrder", dead[0].DeadLetterReason);
        Assert.Equal("the sku is missing", dead[0].DeadLetterErrorDescription);
        Assert.Equal("Other", dead[1].DeadLetterReason);
        Assert.Equal("described", dead[1].DeadLetterErrorDescription);
        Assert.Equal("with props", dead[1].ApplicationProperties["note"]);
        Assert.Null(dead[2].DeadLetterReason);
        Assert.All(dead, m => Assert.Equal(ServiceBusMessageState.Active, m.State));
        foreach (var m in dead) await dlq.CompleteMessageAsync(m);
        Assert.Null(await dlq.PeekMessageAsync());
    }

    [Fact]
    public async Task DefersReceivesTheDeferredBySequenceNumberAndCompletesIt()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-defer").SendMessagesAsync(new[] { new ServiceBusMessage("x") { MessageId = "x1" }, new ServiceBusMessage("y") { MessageId = "y1" } });
        await using var receiver = client.CreateReceiver("data-defer");
        var got = await Receive.AtLeast(receiver, 2);
        await receiver.DeferMessageAsync(got[0]);
        await receiver.DeferMessageAsync(got[1], new Dictionary<string, object> { ["deferred-by"] = "test" });
        Assert.Null(await receiver.ReceiveMessageAsync(TimeSpan.FromMilliseconds(500)));

        var peeked = await receiver.PeekMessagesAsync(10, got[0].SequenceNumber);
        Assert.Equal(2, peeked.Count);
        Assert.All(peeked, m => Assert.Equal(ServiceBusMessageState.Deferred, m.State));

        var one = await receiver.ReceiveDeferredMessageAsync(got[0].SequenceNumber);
        Assert.Equal("x1", one.MessageId);
        Assert.True(one.LockedUntil > DateTimeOffset.UtcNow);
        await receiver.CompleteMessageAsync(one);

        var rest = await receiver.ReceiveDeferredMessagesAsync(new[] { got[1].SequenceNumber });
        var y = Assert.Single(rest);
        Assert.Equal("test", y.ApplicationProperties["deferred-by"]);
        // Settled through $management (update-disposition): abandon with typed properties keeps it deferred.
        await receiver.AbandonMessageAsync(y, new Dictionary<string, object> { ["tries"] = 2, ["big"] = 5L, ["when"] = new DateTime(2024, 1, 1, 0, 0, 0, DateTimeKind.Utc) });
        y = await receiver.ReceiveDeferredMessageAsync(got[1].SequenceNumber);
        Assert.Equal(2, Assert.IsType<int>(y.ApplicationProperties["tries"]));
        Assert.Equal(5L, Assert.IsType<long>(y.ApplicationProperties["big"]));
        Assert.Equal(new DateTime(2024, 1, 1, 0, 0, 0, DateTimeKind.Utc), Assert.IsType<DateTime>(y.ApplicationProperties["when"]).ToUniversalTime());
        await receiver.RenewMessageLockAsync(y);
        await receiver.DeadLetterMessageAsync(y, "FromDeferred", "dead-lettered from the deferred set");
        Assert.Null(await receiver.PeekMessageAsync());

        await using var dlq = Receive.DeadLetters(client, "data-defer");
        var dead = await Receive.One(dlq);
        Assert.Equal("FromDeferred", dead.DeadLetterReason);
        await dlq.CompleteMessageAsync(dead);

        var missing = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.ReceiveDeferredMessageAsync(got[0].SequenceNumber));
        Assert.Equal(ServiceBusFailureReason.MessageNotFound, missing.Reason);
    }

    [Fact]
    public async Task RenewsALockAndMovesLockedUntilForward()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-renew").SendMessageAsync(new ServiceBusMessage("r") { MessageId = "r1" });
        await using var receiver = client.CreateReceiver("data-renew");
        var msg = await Receive.One(receiver);
        var before = msg.LockedUntil;
        await Task.Delay(1100);
        await receiver.RenewMessageLockAsync(msg);
        Assert.True(msg.LockedUntil > before, $"LockedUntil {msg.LockedUntil:O} is not after {before:O}");
        Assert.InRange(msg.LockedUntil, DateTimeOffset.UtcNow.AddSeconds(50), DateTimeOffset.UtcNow.AddSeconds(61));
        await receiver.CompleteMessageAsync(msg);
    }

    [Fact]
    public async Task ReceivesAndDeletes()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-rad").SendMessagesAsync(Enumerable.Range(0, 3).Select(i => new ServiceBusMessage($"r{i}") { MessageId = $"r{i}" }));
        await using var receiver = client.CreateReceiver("data-rad", new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        var got = await Receive.AtLeast(receiver, 3);
        Assert.Equal(new[] { "r0", "r1", "r2" }, got.Select(m => m.MessageId));
        Assert.Null(await receiver.PeekMessageAsync());
        await Assert.ThrowsAsync<InvalidOperationException>(() => receiver.CompleteMessageAsync(got[0]));
    }
}
