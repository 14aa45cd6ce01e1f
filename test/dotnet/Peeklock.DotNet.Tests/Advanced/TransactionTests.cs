using System.Transactions;
using Azure.Messaging.ServiceBus;
using Azure.Messaging.ServiceBus.Administration;
using Xunit;

namespace Peeklock.DotNet.Tests.Advanced;

/// <summary>System.Transactions.TransactionScope over Service Bus: one entity, and cross-entity (send-via) groups.</summary>
public class TransactionTests
{
    private static TransactionScope Scope() => new(TransactionScopeAsyncFlowOption.Enabled);

    [Fact]
    public async Task SendAndCompleteCommitTogetherOrNotAtAll()
    {
        const string queue = "adv-tx-a";
        await using var client = Adv.Client();
        await using var sender = client.CreateSender(queue);
        await using var receiver = client.CreateReceiver(queue);
        await sender.SendMessageAsync(new ServiceBusMessage("first"));
        var first = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
        Assert.Equal("first", first.Body.ToString());

        // Rolled back (no Complete): the send never happened, the complete did not settle.
        using (Scope())
        {
            await sender.SendMessageAsync(new ServiceBusMessage("rolled-back"));
            await receiver.CompleteMessageAsync(first);
        }
        Assert.Null(await receiver.PeekMessageAsync(first.SequenceNumber + 1));

        // Committed: both at once.
        using (var ts = Scope())
        {
            await sender.SendMessageAsync(new ServiceBusMessage("second"));
            await receiver.CompleteMessageAsync(first);
            ts.Complete();
        }
        var ex = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.CompleteMessageAsync(first));
        Assert.Equal(ServiceBusFailureReason.MessageLockLost, ex.Reason);
        var second = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
        Assert.Equal("second", second.Body.ToString());
        await receiver.CompleteMessageAsync(second);
        Assert.Null(await receiver.PeekMessageAsync());
    }

    [Fact]
    public async Task CrossEntityReceivesFirstThenSendsViaItToOthers()
    {
        await using var plain = Adv.Client();
        await using (var seed = plain.CreateSender("adv-tx-b")) await seed.SendMessageAsync(new ServiceBusMessage("in"));
        await using var client = Adv.Client(o => { o.EnableCrossEntityTransactions = true; o.RetryOptions = Adv.NoRetry(10); });
        var receiverB = client.CreateReceiver("adv-tx-b");
        var toTopic = client.CreateSender("adv-tx-topic");
        var toC = client.CreateSender("adv-tx-c");
        var received = await receiverB.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
        Assert.NotNull(received);

        // Rolled back first: nothing moves, the message stays locked by us.
        using (Scope())
        {
            await receiverB.CompleteMessageAsync(received);
            await toTopic.SendMessageAsync(new ServiceBusMessage("out-rolled-back"));
        }
        await using var sub = plain.CreateReceiver("adv-tx-topic", "all");
        Assert.Null(await sub.PeekMessageAsync());

        using (var ts = Scope())
        {
            await receiverB.CompleteMessageAsync(received);
            await toTopic.SendMessageAsync(new ServiceBusMessage("out-topic"));
            await toC.SendMessageAsync(new ServiceBusMessage("out-queue"));
            ts.Complete();
        }
        await using var c = plain.CreateReceiver("adv-tx-c");
        var queued = await c.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
        Assert.Equal("out-queue", queued?.Body.ToString());
        await c.CompleteMessageAsync(queued!);
        var fanned = await sub.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
        Assert.Equal("out-topic", fanned?.Body.ToString());
        await sub.CompleteMessageAsync(fanned!);
        await using var checkB = plain.CreateReceiver("adv-tx-b");
        Assert.Null(await checkB.PeekMessageAsync());
    }

    [Fact]
    public async Task CrossEntitySendsGoThroughTheViaEntitysTransferQueue()
    {
        const string via = "adv-tx-via", dest = "adv-tx-dest";
        await using var plain = Adv.Client();
        await using (var seed = plain.CreateSender(via)) await seed.SendMessagesAsync(new[] { new ServiceBusMessage("in-1"), new ServiceBusMessage("in-2") });
        await using var client = Adv.Client(o => { o.EnableCrossEntityTransactions = true; o.RetryOptions = Adv.NoRetry(10); });
        var receiver = client.CreateReceiver(via);
        var toDest = client.CreateSender(dest);
        var first = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
        Assert.NotNull(first);
        using (var ts = Scope())
        {
            await receiver.CompleteMessageAsync(first);
            await toDest.SendMessageAsync(new ServiceBusMessage("out-1") { MessageId = "out-1" });
            ts.Complete();
        }

        // The destination stops taking sends. The transfer queue takes the next send all the same, and the transfer
        // that follows the commit, refused, leaves the message in the via entity's transfer dead-letter queue
        // ("Transactions in Service Bus": a transfer moves it on as auto-forwarding does; dead-letter queues doc:
        // a disabled destination sends it to the transfer dead-letter queue).
        var admin = AdministrationTests.Admin("http-port");
        var props = (await admin.GetQueueAsync(dest)).Value;
        props.Status = EntityStatus.SendDisabled;
        await admin.UpdateQueueAsync(props);
        try
        {
            var second = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
            Assert.NotNull(second);
            using (var ts = Scope())
            {
                await receiver.CompleteMessageAsync(second);
                await toDest.SendMessageAsync(new ServiceBusMessage("out-2") { MessageId = "out-2" });
                ts.Complete();
            }
            Assert.Null(await receiver.PeekMessageAsync());
            await using var tdlq = plain.CreateReceiver(via, new ServiceBusReceiverOptions { SubQueue = SubQueue.TransferDeadLetter });
            var dead = await tdlq.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
            Assert.Equal("out-2", dead?.MessageId);
            Assert.Equal("MessagingEntityDisabled", dead!.DeadLetterReason);
            await tdlq.CompleteMessageAsync(dead);
        }
        finally
        {
            props.Status = EntityStatus.Active;
            await admin.UpdateQueueAsync(props);
        }
        var arrived = await Adv.TakeAvailable(plain, dest, 2);
        Assert.Equal(new[] { "out-1" }, arrived.Select(m => m.MessageId));
    }

    [Fact]
    public async Task CrossEntityRefusesAReceiveOnAnotherEntityAfterTheFirstSend()
    {
        await using var plain = Adv.Client();
        await using (var seed = plain.CreateSender("adv-tx-order-a")) await seed.SendMessageAsync(new ServiceBusMessage("a"));
        await using var client = Adv.Client(o => { o.EnableCrossEntityTransactions = true; o.RetryOptions = Adv.NoRetry(10); });
        var senderB = client.CreateSender("adv-tx-order-b");
        var receiverA = client.CreateReceiver("adv-tx-order-a");
        var receiverB = client.CreateReceiver("adv-tx-order-b");
        // B is the send-via entity: it was used first.
        await senderB.SendMessageAsync(new ServiceBusMessage("b"));
        // A receive cannot be routed through another entity: Service Bus refuses the link (amqp:not-allowed).
        await Assert.ThrowsAsync<InvalidOperationException>(() => receiverA.ReceiveMessageAsync(TimeSpan.FromSeconds(2)));
        // B itself still works, in a transaction too.
        var b = await receiverB.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
        Assert.NotNull(b);
        using (var ts = Scope())
        {
            await receiverB.CompleteMessageAsync(b);
            ts.Complete();
        }
        Assert.Null(await receiverB.PeekMessageAsync());
        // A's message is untouched.
        await using var checkA = plain.CreateReceiver("adv-tx-order-a");
        var a = await checkA.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
        Assert.Equal("a", a?.Body.ToString());
        await checkA.CompleteMessageAsync(a!);
    }

    [Fact]
    public async Task WithoutCrossEntityATransactionStaysOnOneEntity()
    {
        await using var client = Adv.Client(o => o.RetryOptions = Adv.NoRetry(10));
        await using var toA = client.CreateSender("adv-tx-a");
        await using var toTopic = client.CreateSender("adv-tx-topic");
        using (Scope())
        {
            await toA.SendMessageAsync(new ServiceBusMessage("a"));
            // Service Bus: local transactions cannot span multiple top-level entities without send-via.
            await Assert.ThrowsAsync<InvalidOperationException>(() => toTopic.SendMessageAsync(new ServiceBusMessage("t")));
        }
    }

    [Fact]
    public async Task ATransactionBelongsToTheConnectionThatDeclaredIt()
    {
        const string queue = "adv-tx-clients";
        await using var client1 = Adv.Client(o => o.RetryOptions = Adv.NoRetry(10));
        await using var client2 = Adv.Client(o => o.RetryOptions = Adv.NoRetry(10));
        await using var sender = client1.CreateSender(queue);
        await using var receiver = client2.CreateReceiver(queue);
        await sender.SendMessageAsync(new ServiceBusMessage("one"));
        var received = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
        using (var ts = Scope())
        {
            await receiver.CompleteMessageAsync(received);
            // Another client is another connection: the transaction is unknown there (Service Bus: no distributed transactions).
            await Assert.ThrowsAsync<ServiceBusException>(() => sender.SendMessageAsync(new ServiceBusMessage("two")));
        }
        // Rolled back: the message is still ours to complete, and "two" was never stored.
        await receiver.CompleteMessageAsync(received);
        Assert.Null(await receiver.PeekMessageAsync());
    }
}
