using System.Diagnostics;
using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>How the .NET receiver uses credit: left-over credit and released messages, and drain on close.</summary>
public class CreditTests
{
    [Fact]
    public async Task TakesBackAMessageTheReceiverReleasedWithoutCountingADelivery()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("data-release");
        await using var receiver = client.CreateReceiver("data-release");
        await sender.SendMessageAsync(new ServiceBusMessage("first") { MessageId = "first" });
        // A call for 10 returns with the one message there is; 9 credits stay on the link (.NET does not drain them).
        var first = await receiver.ReceiveMessagesAsync(10, TimeSpan.FromSeconds(5));
        Assert.Single(first);
        await receiver.CompleteMessageAsync(first[0]);
        // This one arrives into the left-over credit while no call waits: the client releases it at once.
        await sender.SendMessageAsync(new ServiceBusMessage("second") { MessageId = "second" });
        // Peeked until the release has come back (bounded): a counted release shows the count the credit ran it up to.
        ServiceBusReceivedMessage? peeked = null;
        for (var deadline = DateTime.UtcNow.AddSeconds(5); DateTime.UtcNow < deadline; await Task.Delay(100))
        {
            peeked = await receiver.PeekMessageAsync(1);
            if (peeked?.DeliveryCount == 0) break;
        }
        Assert.Equal("second", peeked!.MessageId);
        Assert.Equal(0, peeked.DeliveryCount);
        var second = await Receive.One(receiver);
        Assert.Equal("second", second.MessageId);
        Assert.Equal(1, second.DeliveryCount);
        await receiver.CompleteMessageAsync(second);
    }

    [Fact]
    public async Task ClosesAReceiverWithLeftOverCreditPromptly()
    {
        await using var client = Broker.Client();
        var receiver = client.CreateReceiver("data-release", new ServiceBusReceiverOptions { PrefetchCount = 20 });
        Assert.Null(await receiver.ReceiveMessageAsync(TimeSpan.FromMilliseconds(300)));
        var clock = Stopwatch.StartNew();
        await receiver.DisposeAsync();
        Assert.True(clock.Elapsed < TimeSpan.FromSeconds(5), $"closing took {clock.Elapsed}");
    }
}
