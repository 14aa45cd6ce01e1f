using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>Sending: one message, a list (the batch format), a ServiceBusMessageBatch filled to the size the broker announces, and a refusal.</summary>
public class SendTests
{
    [Fact]
    public async Task SendsOneAndAListAndReceivesThemInOrder()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("data-send");
        await sender.SendMessageAsync(new ServiceBusMessage("one") { MessageId = "s1", Subject = "single", ContentType = "text/plain", CorrelationId = "c1" });
        await sender.SendMessagesAsync(new[] { new ServiceBusMessage("two") { MessageId = "s2" }, new ServiceBusMessage("three") { MessageId = "s3" } });
        await using var receiver = client.CreateReceiver("data-send");
        var got = await Receive.AtLeast(receiver, 3);
        Assert.Equal(new[] { "one", "two", "three" }, got.Select(m => m.Body.ToString()));
        Assert.Equal(new[] { "s1", "s2", "s3" }, got.Select(m => m.MessageId));
        Assert.Equal("single", got[0].Subject);
        Assert.Equal("text/plain", got[0].ContentType);
        Assert.Equal("c1", got[0].CorrelationId);
        foreach (var m in got) await receiver.CompleteMessageAsync(m);
        Assert.Null(await receiver.PeekMessageAsync());
    }

    [Fact]
    public async Task FillsAMessageBatchToTheAnnouncedSizeAndSendsIt()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("data-batch");
        using var batch = await sender.CreateMessageBatchAsync();
        // The broker's attach reply announces max-message-size 262144 and com.microsoft:max-message-batch-size (a long).
        Assert.Equal(262_144, batch.MaxSizeInBytes);
        var body = new byte[1000];
        var added = 0;
        while (added < 1000 && batch.TryAddMessage(new ServiceBusMessage(body) { MessageId = $"b{added}" })) added++;
        Assert.InRange(added, 200, 262);
        Assert.InRange(batch.SizeInBytes, 250_000, 262_144);
        await sender.SendMessagesAsync(batch);
        await using var receiver = client.CreateReceiver("data-batch", new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete, PrefetchCount = 100 });
        var got = await Receive.AtLeast(receiver, added, TimeSpan.FromSeconds(30));
        Assert.Equal(added, got.Count);
        Assert.Equal(Enumerable.Range(0, added).Select(i => $"b{i}"), got.Select(m => m.MessageId));
    }

    [Fact]
    public async Task RefusesAMessageOverTheSizeLimitWithMessageSizeExceeded()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("data-size");
        var ex = await Assert.ThrowsAsync<ServiceBusException>(() => sender.SendMessageAsync(new ServiceBusMessage(new byte[300_000])));
        Assert.Equal(ServiceBusFailureReason.MessageSizeExceeded, ex.Reason);
        // The link survives the refusal: a message within the limit still goes.
        await sender.SendMessageAsync(new ServiceBusMessage(new byte[200_000]) { MessageId = "fits" });
        await using var receiver = client.CreateReceiver("data-size", new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        var msg = await Receive.One(receiver);
        Assert.Equal("fits", msg.MessageId);
        Assert.Equal(200_000, msg.Body.ToArray().Length);
    }
}
