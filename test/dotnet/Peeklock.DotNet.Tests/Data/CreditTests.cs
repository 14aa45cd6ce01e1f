using System.Diagnostics;
using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>How the .NET receiver uses credit (left-over credit and released messages, drain on close, prefetch refill), and the entity size quota.</summary>
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

    [Fact]
    public async Task RefillsPrefetchCreditAsPeekLockedMessagesAreSettled()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-prefetch").SendMessagesAsync(Enumerable.Range(0, 150).Select(i => new ServiceBusMessage($"p{i}") { MessageId = $"p{i}" }));
        await using var receiver = client.CreateReceiver("data-prefetch", new ServiceBusReceiverOptions { PrefetchCount = 30 });
        var seen = new List<string>();
        for (var deadline = DateTime.UtcNow.AddSeconds(30); seen.Count < 150 && DateTime.UtcNow < deadline;)
        {
            foreach (var m in await receiver.ReceiveMessagesAsync(25, TimeSpan.FromSeconds(2)))
            {
                await receiver.CompleteMessageAsync(m);
                seen.Add(m.MessageId);
            }
        }
        Assert.Equal(Enumerable.Range(0, 150).Select(i => $"p{i}"), seen);
        Assert.Null(await receiver.PeekMessageAsync());
    }

    [Fact]
    public async Task RefusesASendOverTheEntitySizeWithQuotaExceeded()
    {
        await using var client = Broker.Client(new ServiceBusClientOptions { RetryOptions = new ServiceBusRetryOptions { MaxRetries = 0 } });
        await using var sender = client.CreateSender("data-quota");
        ServiceBusException? refused = null;
        for (var i = 0; i < 10 && refused is null; i++)
        {
            try { await sender.SendMessageAsync(new ServiceBusMessage(new byte[200_000])); }
            catch (ServiceBusException ex) { refused = ex; }
        }
        Assert.NotNull(refused);
        Assert.Equal(ServiceBusFailureReason.QuotaExceeded, refused!.Reason);
        Assert.False(refused.IsTransient);
        // Receiving makes room again.
        await using var receiver = client.CreateReceiver("data-quota", new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        await Receive.One(receiver);
        await sender.SendMessageAsync(new ServiceBusMessage(new byte[200_000]));
    }
}
