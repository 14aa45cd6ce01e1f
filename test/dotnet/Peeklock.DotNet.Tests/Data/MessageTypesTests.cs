using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>What survives the broker: application properties of every .NET type the SDK maps (Uri, DateTimeOffset, TimeSpan as described types), and the broker's annotations.</summary>
public class MessageTypesTests
{
    private static readonly Uri SomeUri = new("https://example.com/orders/7?x=1");
    private static readonly DateTimeOffset SomeTime = new(2024, 5, 6, 7, 8, 9, 123, TimeSpan.FromHours(2));
    private static readonly TimeSpan SomeSpan = TimeSpan.FromMilliseconds(90_061_001.5);

    private static void AssertProperties(IReadOnlyDictionary<string, object> p)
    {
        Assert.Equal(SomeUri, Assert.IsType<Uri>(p["uri"]));
        Assert.Equal(SomeTime, Assert.IsType<DateTimeOffset>(p["time"]));
        Assert.Equal(SomeSpan, Assert.IsType<TimeSpan>(p["span"]));
        Assert.Equal("text", Assert.IsType<string>(p["string"]));
        Assert.Equal(42, Assert.IsType<int>(p["int"]));
        Assert.Equal(42L << 40, Assert.IsType<long>(p["long"]));
        Assert.Equal((short)7, Assert.IsType<short>(p["short"]));
        Assert.Equal((byte)8, Assert.IsType<byte>(p["byte"]));
        Assert.Equal(1.5, Assert.IsType<double>(p["double"]));
        Assert.Equal(2.5f, Assert.IsType<float>(p["float"]));
        Assert.True(Assert.IsType<bool>(p["bool"]));
        Assert.Equal('c', Assert.IsType<char>(p["char"]));
        Assert.Equal(new Guid("0f8fad5b-d9cb-469f-a165-70867728950e"), Assert.IsType<Guid>(p["guid"]));
        Assert.Equal(new DateTime(2024, 1, 2, 3, 4, 5, DateTimeKind.Utc), Assert.IsType<DateTime>(p["datetime"]).ToUniversalTime());
        Assert.Equal(new byte[] { 1, 2, 3 }, Assert.IsType<byte[]>(p["bytes"]));
        Assert.Equal(9UL, Assert.IsType<ulong>(p["ulong"]));
        Assert.Null(p["null"]);
    }

    [Fact]
    public async Task RoundTripsApplicationPropertiesOfEveryMappedType()
    {
        await using var client = Broker.Client();
        var msg = new ServiceBusMessage("typed") { MessageId = "typed" };
        var props = msg.ApplicationProperties;
        props["uri"] = SomeUri;
        props["time"] = SomeTime;
        props["span"] = SomeSpan;
        props["string"] = "text";
        props["int"] = 42;
        props["long"] = 42L << 40;
        props["short"] = (short)7;
        props["byte"] = (byte)8;
        props["double"] = 1.5;
        props["float"] = 2.5f;
        props["bool"] = true;
        props["char"] = 'c';
        props["guid"] = new Guid("0f8fad5b-d9cb-469f-a165-70867728950e");
        props["datetime"] = new DateTime(2024, 1, 2, 3, 4, 5, DateTimeKind.Utc);
        props["bytes"] = new byte[] { 1, 2, 3 };
        props["ulong"] = 9UL;
        props["null"] = null!;
        await client.CreateSender("data-props").SendMessageAsync(msg);

        await using var receiver = client.CreateReceiver("data-props");
        // Peeked (the $management encoding) and received (the link's) must carry the same values and types.
        var peeked = await receiver.PeekMessageAsync();
        AssertProperties(peeked!.ApplicationProperties);
        var got = await Receive.One(receiver);
        AssertProperties(got.ApplicationProperties);
        // Abandoned and received again: the stored copy keeps them too.
        await receiver.AbandonMessageAsync(got);
        var again = await Receive.One(receiver);
        AssertProperties(again.ApplicationProperties);
        await receiver.DeadLetterMessageAsync(again, "Typed", "checked in the dead-letter queue");
        await using var dlq = Receive.DeadLetters(client, "data-props");
        var dead = await Receive.One(dlq);
        AssertProperties(dead.ApplicationProperties);
        await dlq.CompleteMessageAsync(dead);
    }

    [Fact]
    public async Task AnnotatesReceivedMessagesWithTypedBrokerProperties()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("data-annotations");
        var sentAt = DateTimeOffset.UtcNow;
        await sender.SendMessageAsync(new ServiceBusMessage("no ttl") { MessageId = "a" });
        await sender.SendMessageAsync(new ServiceBusMessage("ttl") { MessageId = "b", TimeToLive = TimeSpan.FromMinutes(3) });
        await using var receiver = client.CreateReceiver("data-annotations");
        var got = await Receive.AtLeast(receiver, 2);
        Assert.Equal(2, got.Count);
        var (a, b) = (got[0], got[1]);
        Assert.True(a.SequenceNumber > 0);
        Assert.True(b.SequenceNumber > a.SequenceNumber);
        Assert.InRange(a.EnqueuedTime, sentAt.AddSeconds(-2), DateTimeOffset.UtcNow.AddSeconds(1));
        Assert.Equal(TimeSpan.Zero, a.EnqueuedTime.Offset);
        Assert.InRange(a.LockedUntil, DateTimeOffset.UtcNow.AddSeconds(50), DateTimeOffset.UtcNow.AddSeconds(61));
        Assert.Equal(1, a.DeliveryCount);
        Assert.Equal(TimeSpan.MaxValue, a.TimeToLive);
        Assert.Equal(DateTimeOffset.MaxValue, a.ExpiresAt);
        Assert.Equal(TimeSpan.FromMinutes(3), b.TimeToLive);
        Assert.InRange(b.ExpiresAt, b.EnqueuedTime.AddMinutes(3).AddSeconds(-1), b.EnqueuedTime.AddMinutes(3).AddSeconds(1));
        Assert.Equal(ServiceBusMessageState.Active, a.State);
        Assert.NotEqual(a.LockToken, b.LockToken);
        Assert.True(Guid.TryParse(a.LockToken, out _));
        foreach (var m in got) await receiver.CompleteMessageAsync(m);
    }
}
