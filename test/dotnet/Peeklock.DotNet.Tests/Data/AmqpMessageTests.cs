using Azure.Core.Amqp;
using Azure.Messaging.ServiceBus;
using Azure.Messaging.ServiceBus.Administration;
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>The whole AMQP message through the broker (AmqpAnnotatedMessage bodies, properties, annotations), and a topic's scheduling and dead-letter queue.</summary>
public class AmqpMessageTests
{
    [Fact]
    public async Task KeepsValueAndSequenceBodiesSystemPropertiesAndUserAnnotations()
    {
        await using var client = Broker.Client();
        var value = new ServiceBusMessage(new AmqpAnnotatedMessage(AmqpMessageBody.FromValue(new Dictionary<string, object> { ["k"] = 7L })));
        value.MessageId = "value";
        value.GetRawAmqpMessage().MessageAnnotations["x-custom"] = "kept";
        var sequence = new ServiceBusMessage(new AmqpAnnotatedMessage(AmqpMessageBody.FromSequence(new[] { (IList<object>)new List<object> { 1, "two" } })));
        sequence.MessageId = "sequence";
        var props = new ServiceBusMessage("props")
        {
            MessageId = "props", To = "someone", ReplyTo = "back", ReplyToSessionId = "rs", CorrelationId = "c", Subject = "s",
            ContentType = "application/x-test", TimeToLive = TimeSpan.FromMinutes(2),
        };
        await client.CreateSender("data-amqp").SendMessagesAsync(new[] { value, sequence, props });

        await using var receiver = client.CreateReceiver("data-amqp");
        var peeked = (await receiver.PeekMessagesAsync(3, 1)).ToList();
        var received = await Receive.AtLeast(receiver, 3);
        // Peeked (encoded into a $management reply) and received (a transfer) alike.
        foreach (var got in new[] { peeked, received })
        {
            Assert.Equal(new[] { "value", "sequence", "props" }, got.Select(m => m.MessageId));
            var v = got[0].GetRawAmqpMessage();
            Assert.Equal(AmqpMessageBodyType.Value, v.Body.BodyType);
            Assert.True(v.Body.TryGetValue(out var map));
            Assert.Equal(7L, Assert.IsType<long>(((IDictionary<string, object>)map!)["k"]));
            Assert.Equal("kept", v.MessageAnnotations["x-custom"]);
            var s = got[1].GetRawAmqpMessage();
            Assert.Equal(AmqpMessageBodyType.Sequence, s.Body.BodyType);
            Assert.True(s.Body.TryGetSequence(out var seq));
            Assert.Equal(new object[] { 1, "two" }, seq!.Single());
            var p = got[2];
            Assert.Equal(("someone", "back", "rs", "c", "s", "application/x-test"), (p.To, p.ReplyTo, p.ReplyToSessionId, p.CorrelationId, p.Subject, p.ContentType));
            Assert.Equal(TimeSpan.FromMinutes(2), p.TimeToLive);
        }
        foreach (var m in received) await receiver.CompleteMessageAsync(m);
        Assert.Null(await receiver.PeekMessageAsync());
    }

    [Fact]
    public async Task SchedulesToATopicCancelsThereAndDeadLettersFromASubscription()
    {
        await using var client = Broker.Client();
        await using var rules = client.CreateRuleManager("data-topic-sched", "none");
        await rules.CreateRuleAsync("nothing", new FalseRuleFilter());
        await rules.DeleteRuleAsync(RuleProperties.DefaultRuleName);
        var onlyFalse = new List<RuleProperties>();
        await foreach (var r in rules.GetRulesAsync()) onlyFalse.Add(r);
        // The SDK sends FalseRuleFilter as sql-filter "1=0" (it subclasses SqlRuleFilter); it reads back as the false filter.
        Assert.IsType<FalseRuleFilter>(Assert.Single(onlyFalse).Filter);

        await using var sender = client.CreateSender("data-topic-sched");
        var gone = await sender.ScheduleMessageAsync(new ServiceBusMessage("gone") { MessageId = "gone" }, DateTimeOffset.UtcNow.AddMinutes(5));
        // Links are open now: a short schedule is not overtaken by the first call's connection set-up.
        var at = DateTimeOffset.UtcNow.AddSeconds(1);
        var kept = await sender.ScheduleMessageAsync(new ServiceBusMessage("kept") { MessageId = "kept" }, at);
        await using var peeker = client.CreateReceiver("data-topic-sched", "s");
        Assert.Equal(ServiceBusMessageState.Scheduled, (await peeker.PeekMessagesAsync(10, 1)).Single(m => m.MessageId == "gone").State);
        await sender.CancelScheduledMessageAsync(gone);

        await using var receiver = client.CreateReceiver("data-topic-sched", "s");
        var msg = await Receive.One(receiver, 10);
        Assert.Equal("kept", msg.MessageId);
        await receiver.DeadLetterMessageAsync(msg, "FromSubscription", "checked in the subscription's DLQ");
        Assert.Null(await receiver.ReceiveMessageAsync(TimeSpan.FromMilliseconds(300)));

        await using var dlq = client.CreateReceiver("data-topic-sched", "s", new ServiceBusReceiverOptions { SubQueue = SubQueue.DeadLetter });
        Assert.Equal("data-topic-sched/Subscriptions/s/$DeadLetterQueue", dlq.EntityPath);
        var dead = await Receive.One(dlq);
        Assert.Equal(("kept", "FromSubscription"), (dead.MessageId, dead.DeadLetterReason));
        await dlq.CompleteMessageAsync(dead);
        await using var none = client.CreateReceiver("data-topic-sched", "none");
        Assert.Null(await none.PeekMessageAsync());
    }
}
