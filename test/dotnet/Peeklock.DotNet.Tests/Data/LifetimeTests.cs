using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>What the entity does on its own: TTL expiry (dropped or dead-lettered), duplicate detection, MaxDeliveryCount, lock expiry.</summary>
public class LifetimeTests
{
    [Fact]
    public async Task DeadLettersAnExpiredMessageWhereExpiryDeadLetteringIsOn()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-ttl").SendMessagesAsync(new[]
        {
            new ServiceBusMessage("short") { MessageId = "short", TimeToLive = TimeSpan.FromSeconds(1) },
            new ServiceBusMessage("long") { MessageId = "long", TimeToLive = TimeSpan.FromMinutes(5) },
        });
        await Task.Delay(1500);
        await using var receiver = client.CreateReceiver("data-ttl");
        var live = await Receive.One(receiver);
        Assert.Equal("long", live.MessageId);
        Assert.Equal(TimeSpan.FromMinutes(5), live.TimeToLive);
        await receiver.CompleteMessageAsync(live);

        await using var dlq = Receive.DeadLetters(client, "data-ttl");
        var dead = await Receive.One(dlq);
        Assert.Equal("short", dead.MessageId);
        Assert.Equal("TTLExpiredException", dead.DeadLetterReason);
        await dlq.CompleteMessageAsync(dead);
    }

    [Fact]
    public async Task DropsAnExpiredMessageWhereExpiryDeadLetteringIsOff()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-ttl-drop").SendMessageAsync(new ServiceBusMessage("gone") { TimeToLive = TimeSpan.FromSeconds(1) });
        await Task.Delay(1500);
        await using var receiver = client.CreateReceiver("data-ttl-drop");
        Assert.Null(await receiver.ReceiveMessageAsync(TimeSpan.FromMilliseconds(500)));
        await using var dlq = Receive.DeadLetters(client, "data-ttl-drop");
        Assert.Null(await dlq.PeekMessageAsync());
    }

    [Fact]
    public async Task DropsADuplicateMessageIdWithinTheWindow()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("data-dedup");
        await sender.SendMessageAsync(new ServiceBusMessage("first") { MessageId = "dup" });
        await sender.SendMessageAsync(new ServiceBusMessage("second") { MessageId = "dup" });
        await sender.SendMessagesAsync(new[] { new ServiceBusMessage("third") { MessageId = "dup" }, new ServiceBusMessage("other") { MessageId = "other" } });
        await using var receiver = client.CreateReceiver("data-dedup", new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        var got = await Receive.AtLeast(receiver, 3, TimeSpan.FromSeconds(3));
        Assert.Equal(new[] { "first", "other" }, got.Select(m => m.Body.ToString()));
    }

    [Fact]
    public async Task DeadLettersAfterMaxDeliveryCountWithMaxDeliveryCountExceeded()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-maxdelivery").SendMessageAsync(new ServiceBusMessage("poison") { MessageId = "poison" });
        await using var receiver = client.CreateReceiver("data-maxdelivery");
        for (var i = 1; i <= 2; i++)
        {
            var msg = await Receive.One(receiver);
            Assert.Equal(i, msg.DeliveryCount);
            await receiver.AbandonMessageAsync(msg);
        }
        Assert.Null(await receiver.ReceiveMessageAsync(TimeSpan.FromMilliseconds(500)));
        await using var dlq = Receive.DeadLetters(client, "data-maxdelivery");
        var dead = await Receive.One(dlq);
        Assert.Equal("poison", dead.MessageId);
        Assert.Equal("MaxDeliveryCountExceeded", dead.DeadLetterReason);
        Assert.False(string.IsNullOrEmpty(dead.DeadLetterErrorDescription));
        await dlq.CompleteMessageAsync(dead);
    }

    [Fact]
    public async Task FailsAStaleSettleWithMessageLockLost()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-lock").SendMessageAsync(new ServiceBusMessage("slow") { MessageId = "slow" });
        await using var receiver = client.CreateReceiver("data-lock");
        var msg = await Receive.One(receiver);
        Assert.InRange(msg.LockedUntil, DateTimeOffset.UtcNow.AddSeconds(1), DateTimeOffset.UtcNow.AddSeconds(6));
        await Task.Delay(msg.LockedUntil - DateTimeOffset.UtcNow + TimeSpan.FromMilliseconds(500));
        var ex = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.CompleteMessageAsync(msg));
        Assert.Equal(ServiceBusFailureReason.MessageLockLost, ex.Reason);
        var renew = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.RenewMessageLockAsync(msg));
        Assert.Equal(ServiceBusFailureReason.MessageLockLost, renew.Reason);
        // The message is back, counted once more.
        var again = await Receive.One(receiver);
        Assert.Equal("slow", again.MessageId);
        Assert.Equal(2, again.DeliveryCount);
        await receiver.CompleteMessageAsync(again);
    }
}
