using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>Scheduling and cancelling ($management schedule-message / cancel-scheduled-message), and peeking from a sequence number.</summary>
public class ScheduleAndPeekTests
{
    [Fact]
    public async Task SchedulesCancelsAndDeliversWhatWasNotCancelled()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("data-schedule");
        await using var receiver = client.CreateReceiver("data-schedule");
        // Open the links (and $management) first, so a loaded machine's set-up does not overtake the schedule.
        Assert.Null(await receiver.PeekMessageAsync());
        var at = DateTimeOffset.UtcNow.AddSeconds(2);
        var kept = await sender.ScheduleMessageAsync(new ServiceBusMessage("kept") { MessageId = "kept" }, at);
        var cancelled = await sender.ScheduleMessageAsync(new ServiceBusMessage("cancelled"), at);
        var pair = await sender.ScheduleMessagesAsync(new[] { new ServiceBusMessage("p1"), new ServiceBusMessage("p2") }, at);
        Assert.Equal(2, pair.Count);
        Assert.Equal(4, new HashSet<long> { kept, cancelled, pair[0], pair[1] }.Count);

        var peeked = await receiver.PeekMessagesAsync(10, kept);
        Assert.Equal(4, peeked.Count);
        Assert.All(peeked, m => Assert.Equal(ServiceBusMessageState.Scheduled, m.State));
        Assert.All(peeked, m => Assert.InRange(m.ScheduledEnqueueTime, at.AddMilliseconds(-1), at.AddMilliseconds(1)));
        Assert.Equal(kept, peeked[0].SequenceNumber);

        await sender.CancelScheduledMessageAsync(cancelled);
        await sender.CancelScheduledMessagesAsync(pair);
        Assert.Single(await receiver.PeekMessagesAsync(10, kept));
        if (DateTimeOffset.UtcNow < at.AddMilliseconds(-500)) Assert.Null(await receiver.ReceiveMessageAsync(TimeSpan.FromMilliseconds(300)));

        var msg = await Receive.One(receiver, 10);
        Assert.Equal("kept", msg.MessageId);
        Assert.True(msg.EnqueuedTime >= at.AddMilliseconds(-50), $"enqueued {msg.EnqueuedTime:O} before {at:O}");
        await receiver.CompleteMessageAsync(msg);
        Assert.Null(await receiver.ReceiveMessageAsync(TimeSpan.FromMilliseconds(500)));
    }

    [Fact]
    public async Task PeeksFromASequenceNumberAndPagesOn()
    {
        await using var client = Broker.Client();
        await client.CreateSender("data-peek").SendMessagesAsync(Enumerable.Range(0, 5).Select(i => new ServiceBusMessage($"p{i}") { MessageId = $"p{i}" }));
        await using var receiver = client.CreateReceiver("data-peek");
        var all = await receiver.PeekMessagesAsync(10, 1);
        Assert.Equal(new[] { "p0", "p1", "p2", "p3", "p4" }, all.Select(m => m.MessageId));
        Assert.Equal(all.Select(m => m.SequenceNumber).OrderBy(s => s), all.Select(m => m.SequenceNumber));

        var middle = await receiver.PeekMessagesAsync(2, all[2].SequenceNumber);
        Assert.Equal(new[] { "p2", "p3" }, middle.Select(m => m.MessageId));
        // Without a sequence number the receiver continues after the last one it peeked.
        var next = await receiver.PeekMessageAsync();
        Assert.Equal("p4", next!.MessageId);
        Assert.Null(await receiver.PeekMessageAsync());
        Assert.Empty(await receiver.PeekMessagesAsync(5, all[4].SequenceNumber + 1));
        // Peeking takes no lock and counts no delivery.
        Assert.All(all, m => Assert.Equal(0, m.DeliveryCount));
        var taken = await Receive.AtLeast(receiver, 5);
        Assert.Equal(5, taken.Count);
        Assert.All(taken, m => Assert.Equal(1, m.DeliveryCount));
        foreach (var m in taken) await receiver.CompleteMessageAsync(m);
    }
}
