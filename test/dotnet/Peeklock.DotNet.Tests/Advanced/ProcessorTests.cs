using System.Collections.Concurrent;
using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Advanced;

/// <summary>ServiceBusProcessor: concurrency, prefetch, auto-complete, abandon on a handler exception, lock renewal, stop.</summary>
public class ProcessorTests
{
    // Runs a processor until `until` completes (bounded), then stops it; returns the errors it reported.
    private static async Task<List<ProcessErrorEventArgs>> Run(ServiceBusProcessor processor, Func<ProcessMessageEventArgs, Task> handler, Task until, double seconds)
    {
        var errors = new List<ProcessErrorEventArgs>();
        processor.ProcessMessageAsync += handler;
        processor.ProcessErrorAsync += args => { lock (errors) errors.Add(args); return Task.CompletedTask; };
        await processor.StartProcessingAsync();
        try { await Adv.Within(until, seconds, "the processor's work"); }
        finally { await processor.StopProcessingAsync(); }
        return errors;
    }

    [Theory]
    [InlineData("adv-proc-one", 1, 0, 12)]
    [InlineData("adv-proc-many", 16, 100, 60)]
    [InlineData("adv-proc-many-0", 16, 0, 40)]
    [InlineData("adv-proc-one-100", 1, 100, 12)]
    public async Task ProcessesEveryMessageOnceAndAutoCompletes(string queue, int maxConcurrentCalls, int prefetch, int count)
    {
        await using var client = Adv.Client();
        await Adv.SendMany(client, queue, count);
        var seen = new ConcurrentDictionary<string, int>();
        int active = 0, maxActive = 0;
        var done = new TaskCompletionSource();
        await using var processor = client.CreateProcessor(queue, new ServiceBusProcessorOptions { MaxConcurrentCalls = maxConcurrentCalls, PrefetchCount = prefetch });
        var errors = await Run(processor, async args =>
        {
            var now = Interlocked.Increment(ref active);
            int seenMax;
            while (now > (seenMax = Volatile.Read(ref maxActive)) && Interlocked.CompareExchange(ref maxActive, now, seenMax) != seenMax) { }
            await Task.Delay(maxConcurrentCalls > 1 ? 100 : 10);
            Interlocked.Decrement(ref active);
            seen.AddOrUpdate(args.Message.Body.ToString(), 1, (_, n) => n + 1);
            if (seen.Count == count) done.TrySetResult();
        }, done.Task, 45);
        Assert.Empty(errors.Select(e => e.Exception.ToString()));
        Assert.Equal(count, seen.Count);
        Assert.All(seen.Values, n => Assert.Equal(1, n));
        Assert.InRange(maxActive, 1, maxConcurrentCalls);
        if (maxConcurrentCalls > 1) Assert.True(maxActive > 1, $"handlers never overlapped (max {maxActive})");
        // Auto-complete settled every one: nothing is left, locked or not.
        await using var receiver = client.CreateReceiver(queue);
        Assert.Null(await receiver.PeekMessageAsync());
    }

    [Fact]
    public async Task AbandonsWhenTheHandlerThrowsAndRedelivers()
    {
        const string queue = "adv-proc-throw";
        await using var client = Adv.Client();
        await Adv.SendMany(client, queue, 1);
        var deliveries = new ConcurrentQueue<int>();
        var done = new TaskCompletionSource();
        await using var processor = client.CreateProcessor(queue, new ServiceBusProcessorOptions { MaxConcurrentCalls = 1 });
        var errors = await Run(processor, args =>
        {
            deliveries.Enqueue(args.Message.DeliveryCount);
            if (args.Message.DeliveryCount == 1) throw new InvalidOperationException("handler failure on purpose");
            done.TrySetResult();
            return Task.CompletedTask;
        }, done.Task, 20);
        // The first delivery was abandoned (not left to expire): it came back at once with DeliveryCount 2.
        Assert.Equal(new[] { 1, 2 }, deliveries.ToArray());
        var error = Assert.Single(errors);
        Assert.Equal(ServiceBusErrorSource.ProcessMessageCallback, error.ErrorSource);
        Assert.IsType<InvalidOperationException>(error.Exception);
        await using var receiver = client.CreateReceiver(queue);
        Assert.Null(await receiver.PeekMessageAsync());
    }

    [Fact]
    public async Task RenewsTheLockPastTheLockDuration()
    {
        const string queue = "adv-proc-renew"; // LockDuration PT5S
        await using var client = Adv.Client();
        await Adv.SendMany(client, queue, 1);
        var done = new TaskCompletionSource();
        DateTimeOffset firstLockedUntil = default, lastLockedUntil = default;
        await using var processor = client.CreateProcessor(queue, new ServiceBusProcessorOptions
        {
            MaxConcurrentCalls = 1,
            MaxAutoLockRenewalDuration = TimeSpan.FromSeconds(30),
        });
        var errors = await Run(processor, async args =>
        {
            firstLockedUntil = args.Message.LockedUntil;
            // Longer than the 5 s lock: only the processor's renewals keep it.
            await Task.Delay(TimeSpan.FromSeconds(7.5));
            lastLockedUntil = args.Message.LockedUntil;
            done.TrySetResult();
        }, done.Task, 30);
        Assert.Empty(errors.Select(e => e.Exception.ToString()));
        Assert.True(lastLockedUntil > firstLockedUntil.AddSeconds(2), $"lock not renewed: {firstLockedUntil:O} -> {lastLockedUntil:O}");
        // The auto-complete after 7.5 s succeeded (no MessageLockLost above) and the message is gone.
        await using var receiver = client.CreateReceiver(queue);
        Assert.Null(await receiver.PeekMessageAsync());
    }

    [Fact]
    public async Task StopHoldsAtMostOneMessagePerCallAndLosesNothing()
    {
        // Without prefetch each concurrent call has credit for one message. A message that reaches the client while
        // StopProcessingAsync cancels its call is neither handed to the handler nor released by the SDK: it stays
        // locked on the open link, as it would in Service Bus, and comes back when its 5 s lock lapses. So at most
        // MaxConcurrentCalls (2) are held at the stop; everything else not completed is available at once.
        var (completed, rest) = await StopAndCount("adv-proc-stop", prefetch: 0);
        Assert.InRange(rest, 40 - completed - 2, 40 - completed);
        await AllBackAfterTheLock("adv-proc-stop", completed, rest);
    }

    [Fact]
    public async Task StopWithPrefetchLosesNothingAndHoldsNothingPastTheLockDuration()
    {
        // Prefetched messages are locked when they reach the client's buffer. On the stop the client may release
        // them (released: back at once, no delivery counted, AMQP 1.0 §3.4.4) or leave them to their locks (closing a
        // link does not release its locks, as in Service Bus: back after the 5 s lock, the delivery counted); either
        // way every message not completed is available once the lock duration has passed, counted at most once.
        var (completed, rest) = await StopAndCount("adv-proc-stop-prefetch", prefetch: 100);
        await AllBackAfterTheLock("adv-proc-stop-prefetch", completed, rest);
    }

    // Once the queue's 5 s lock has lapsed, every message neither completed nor taken at once is back, its delivery
    // counted at most once more.
    private static async Task AllBackAfterTheLock(string queue, int completed, int rest)
    {
        await Task.Delay(TimeSpan.FromSeconds(5.5));
        await using var client = Adv.Client();
        var back = await Adv.TakeAvailable(client, queue, 40);
        Assert.Equal(40 - completed, back.Count + rest);
        Assert.All(back, m => Assert.InRange(m.DeliveryCount, 1, 2));
    }

    // Runs a processor that completes `handle` messages of 40, stops it, and returns how many it completed and how
    // many of the rest could be received at once.
    private static async Task<(int Completed, int AvailableAtOnce)> StopAndCount(string queue, int prefetch)
    {
        const int count = 40, handle = 6;
        await using var client = Adv.Client();
        await Adv.SendMany(client, queue, count);
        var completed = new ConcurrentDictionary<string, bool>();
        var enough = new TaskCompletionSource();
        await using var processor = client.CreateProcessor(queue, new ServiceBusProcessorOptions
        {
            MaxConcurrentCalls = 2,
            PrefetchCount = prefetch,
            AutoCompleteMessages = false,
        });
        processor.ProcessMessageAsync += async args =>
        {
            if (completed.Count >= handle) { enough.TrySetResult(); await args.AbandonMessageAsync(args.Message); return; }
            await args.CompleteMessageAsync(args.Message);
            completed[args.Message.Body.ToString()] = true;
            if (completed.Count >= handle) enough.TrySetResult();
        };
        var errors = new ConcurrentQueue<string>();
        processor.ProcessErrorAsync += e => { errors.Enqueue($"{e.ErrorSource}: {e.Exception.Message}"); return Task.CompletedTask; };
        await processor.StartProcessingAsync();
        await Adv.Within(enough.Task, 20, $"{handle} messages handled");
        await processor.StopProcessingAsync();
        // What can be received at once: never a completed message, never more than was left.
        var rest = await Adv.TakeAvailable(client, queue, count);
        var restBodies = rest.Select(m => m.Body.ToString()).ToHashSet();
        Assert.Empty(restBodies.Intersect(completed.Keys));
        Assert.True(rest.Count <= count - completed.Count, $"{rest.Count} available, {completed.Count} completed of {count}; errors [{string.Join(" | ", errors)}]");
        return (completed.Count, rest.Count);
    }
}
