using Azure.Messaging.ServiceBus;

namespace Peeklock.DotNet.Tests.Advanced;

/// <summary>Shared pieces of the advanced tests: short-retry clients and bounded waits.</summary>
public static class Adv
{
    /// <summary>Retry options for calls expected to fail: no retries, a short try timeout.</summary>
    public static ServiceBusRetryOptions NoRetry(double tryTimeoutSeconds = 5) =>
        new() { MaxRetries = 0, Delay = TimeSpan.FromMilliseconds(100), TryTimeout = TimeSpan.FromSeconds(tryTimeoutSeconds) };

    /// <summary>A client on the emulator connection string with the given options (short retries by default).</summary>
    public static ServiceBusClient Client(Action<ServiceBusClientOptions>? configure = null)
    {
        var options = new ServiceBusClientOptions
        {
            RetryOptions = new ServiceBusRetryOptions { MaxRetries = 1, Delay = TimeSpan.FromMilliseconds(200), TryTimeout = TimeSpan.FromSeconds(20) },
        };
        configure?.Invoke(options);
        return new ServiceBusClient(Broker.ConnectionString, options);
    }

    /// <summary>Sends `count` messages with bodies "0".."count-1" (and the given session id) in one batch.</summary>
    public static async Task SendMany(ServiceBusClient client, string queue, int count, Func<int, string?>? session = null)
    {
        await using var sender = client.CreateSender(queue);
        using var batch = await sender.CreateMessageBatchAsync();
        for (var i = 0; i < count; i++)
        {
            var m = new ServiceBusMessage(i.ToString()) { MessageId = $"{queue}-{i}" };
            var s = session?.Invoke(i);
            if (s != null) m.SessionId = s;
            if (!batch.TryAddMessage(m)) throw new InvalidOperationException($"message {i} does not fit the batch");
        }
        await sender.SendMessagesAsync(batch);
    }

    /// <summary>
    /// Receives (receive-and-delete) what the queue hands out at once, until `expected` arrived or a short wait
    /// returns nothing: a message still locked by someone is not handed out, so this counts the unlocked ones.
    /// </summary>
    public static async Task<List<ServiceBusReceivedMessage>> TakeAvailable(ServiceBusClient client, string queue, int expected)
    {
        await using var receiver = client.CreateReceiver(queue, new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        var got = new List<ServiceBusReceivedMessage>();
        for (var round = 0; round < 50 && got.Count < expected; round++)
        {
            var batch = await receiver.ReceiveMessagesAsync(expected - got.Count, TimeSpan.FromSeconds(1));
            if (batch.Count == 0) break;
            got.AddRange(batch);
        }
        return got;
    }

    /// <summary>Waits for `task` at most `seconds`, failing with `what` if it has not finished.</summary>
    public static async Task Within(Task task, double seconds, string what)
    {
        if (await Task.WhenAny(task, Task.Delay(TimeSpan.FromSeconds(seconds))) != task)
            throw new TimeoutException($"{what} did not happen within {seconds} s");
        await task;
    }
}
