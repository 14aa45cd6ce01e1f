using Azure.Messaging.ServiceBus;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>Bounded receive loops shared by the data-plane tests: every wait is short and every loop ends.</summary>
public static class Receive
{
    /// <summary>Receives until <paramref name="count"/> messages arrived or <paramref name="within"/> passed.</summary>
    public static async Task<List<ServiceBusReceivedMessage>> AtLeast(ServiceBusReceiver receiver, int count, TimeSpan? within = null)
    {
        var got = new List<ServiceBusReceivedMessage>();
        var deadline = DateTime.UtcNow + (within ?? TimeSpan.FromSeconds(15));
        while (got.Count < count && DateTime.UtcNow < deadline)
        {
            var left = deadline - DateTime.UtcNow;
            var batch = await receiver.ReceiveMessagesAsync(count - got.Count, left < TimeSpan.FromSeconds(2) ? left : TimeSpan.FromSeconds(2));
            got.AddRange(batch);
        }
        return got;
    }

    /// <summary>One message, or a failure that says the entity had none within <paramref name="seconds"/>.</summary>
    public static async Task<ServiceBusReceivedMessage> One(ServiceBusReceiver receiver, double seconds = 10)
    {
        var msg = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(seconds));
        return msg ?? throw new Xunit.Sdk.XunitException($"no message on {receiver.EntityPath} within {seconds} s");
    }

    /// <summary>The dead-letter queue receiver of an entity (SubQueue.DeadLetter).</summary>
    public static ServiceBusReceiver DeadLetters(ServiceBusClient client, string queue) =>
        client.CreateReceiver(queue, new ServiceBusReceiverOptions { SubQueue = SubQueue.DeadLetter });
}
