using System.Collections.Concurrent;
using System.Diagnostics;
using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Advanced;

/// <summary>ServiceBusSessionProcessor, accepting named and next sessions, session state, lock renewal and loss.</summary>
public class SessionTests
{
    [Fact]
    public async Task SessionProcessorHandlesEightSessionsAtOnceInOrderWithState()
    {
        const string queue = "adv-sess-proc";
        const int sessions = 12, perSession = 3;
        await using var client = Adv.Client();
        await Adv.SendMany(client, queue, sessions * perSession, i => $"s{i % sessions:D2}");
        var order = new ConcurrentDictionary<string, ConcurrentQueue<int>>();
        var closed = new ConcurrentDictionary<string, string?>();
        int open = 0, maxOpen = 0, handled = 0;
        var done = new TaskCompletionSource();
        var allClosed = new TaskCompletionSource();
        var errors = new ConcurrentQueue<Exception>();
        var sources = new ConcurrentQueue<string>();
        await using var processor = client.CreateSessionProcessor(queue, new ServiceBusSessionProcessorOptions
        {
            MaxConcurrentSessions = 8,
            SessionIdleTimeout = TimeSpan.FromSeconds(1),
            AutoCompleteMessages = true,
        });
        processor.SessionInitializingAsync += async args =>
        {
            var now = Interlocked.Increment(ref open);
            int m;
            while (now > (m = Volatile.Read(ref maxOpen)) && Interlocked.CompareExchange(ref maxOpen, now, m) != m) { }
            await args.SetSessionStateAsync(new BinaryData("started"));
        };
        processor.SessionClosingAsync += async args =>
        {
            Interlocked.Decrement(ref open);
            closed[args.SessionId] = (await args.GetSessionStateAsync())?.ToString();
            if (closed.Count == sessions) allClosed.TrySetResult();
        };
        processor.ProcessMessageAsync += async args =>
        {
            // The state the initializer set, or the one the previous message of this session left.
            var state = (await args.GetSessionStateAsync()).ToString();
            Assert.True(state == "started" || state.StartsWith("last="), $"session state '{state}'");
            order.GetOrAdd(args.Message.SessionId, _ => new()).Enqueue(int.Parse(args.Message.Body.ToString()));
            await Task.Delay(150);
            await args.SetSessionStateAsync(new BinaryData($"last={args.Message.Body}"));
            if (Interlocked.Increment(ref handled) == sessions * perSession) done.TrySetResult();
        };
        processor.ProcessErrorAsync += args => { errors.Enqueue(args.Exception); sources.Enqueue($"{args.ErrorSource}"); return Task.CompletedTask; };
        await processor.StartProcessingAsync();
        // Each session is closed by the processor once a receive waited SessionIdleTimeout (1 s) for nothing.
        try { await Adv.Within(Task.WhenAll(done.Task, allClosed.Task), 45, "every session message handled and every session closed"); }
        catch (TimeoutException e)
        {
            throw new TimeoutException($"{e.Message}: {handled} handled in {order.Count} sessions; errors: {string.Join(" | ", sources)} {string.Join(" | ", errors.Select(x => x.ToString()))}");
        }
        finally { await processor.StopProcessingAsync(); }
        Assert.Empty(errors.Select(e => e.ToString()));
        Assert.Equal(sessions, order.Count);
        foreach (var (id, q) in order)
        {
            var n = int.Parse(id[1..]);
            Assert.Equal(Enumerable.Range(0, perSession).Select(k => n + k * sessions), q.ToArray());
        }
        Assert.InRange(maxOpen, 2, 8);
        // Each session was closed after its idle timeout, with the state the handler last set.
        Assert.Equal(sessions, closed.Count);
        Assert.All(closed, kv => Assert.StartsWith("last=", kv.Value));
    }

    [Fact]
    public async Task AcceptsANamedSessionWithStateAndRenewsItsLock()
    {
        const string queue = "adv-sess-named";
        await using var client = Adv.Client();
        await Adv.SendMany(client, queue, 4, i => i % 2 == 0 ? "alpha" : "beta");
        await using var beta = await client.AcceptSessionAsync(queue, "beta");
        Assert.Equal("beta", beta.SessionId);
        Assert.True(beta.SessionLockedUntil > DateTimeOffset.UtcNow, $"SessionLockedUntil {beta.SessionLockedUntil:O}");
        var got = await beta.ReceiveMessagesAsync(10, TimeSpan.FromSeconds(2));
        Assert.Equal(new[] { "1", "3" }, got.Select(m => m.Body.ToString()));
        Assert.All(got, m => Assert.Equal("beta", m.SessionId));
        Assert.Null(await beta.GetSessionStateAsync());
        await beta.SetSessionStateAsync(new BinaryData(new byte[] { 0, 1, 2, 255 }));
        Assert.Equal(new byte[] { 0, 1, 2, 255 }, (await beta.GetSessionStateAsync()).ToArray());
        var before = beta.SessionLockedUntil;
        await Task.Delay(1100);
        await beta.RenewSessionLockAsync();
        Assert.True(beta.SessionLockedUntil > before, $"renewal did not move the lock: {before:O} -> {beta.SessionLockedUntil:O}");
        foreach (var m in got) await beta.CompleteMessageAsync(m);
        // Another receiver cannot take the locked session.
        await using var other = Adv.Client(o => o.RetryOptions = Adv.NoRetry());
        var ex = await Assert.ThrowsAsync<ServiceBusException>(() => other.AcceptSessionAsync(queue, "beta"));
        Assert.Equal(ServiceBusFailureReason.SessionCannotBeLocked, ex.Reason);
        // Next-available skips the locked one and takes alpha.
        await using var next = await client.AcceptNextSessionAsync(queue);
        Assert.Equal("alpha", next.SessionId);
        foreach (var m in await next.ReceiveMessagesAsync(10, TimeSpan.FromSeconds(2))) await next.CompleteMessageAsync(m);
        await beta.SetSessionStateAsync(null);
    }

    [Fact]
    public async Task AcceptNextOnAnEmptyEntityTimesOutWithinTheTryTimeout()
    {
        await using var client = Adv.Client(o => o.RetryOptions = Adv.NoRetry(tryTimeoutSeconds: 3));
        // Open the connection (and its CBS link) first, so the clock measures the wait for a session alone.
        await using (var warm = client.CreateReceiver("dotnet-smoke")) await warm.PeekMessageAsync();
        var clock = Stopwatch.StartNew();
        var ex = await Assert.ThrowsAsync<ServiceBusException>(() => client.AcceptNextSessionAsync("adv-sess-empty"));
        clock.Stop();
        Assert.Equal(ServiceBusFailureReason.ServiceTimeout, ex.Reason);
        Assert.True(ex.IsTransient);
        // The broker answers (it is told the wait in com.microsoft:timeout, TryTimeout less the SDK's margin):
        // its detach's description, not the client's own timer, is what the SDK reports.
        Assert.Contains("No unlocked session was available", ex.Message);
        Assert.InRange(clock.Elapsed.TotalSeconds, 1.5, 6);
    }

    [Fact]
    public async Task SessionLockRenewedSurvivesAndUnrenewedIsLost()
    {
        const string queue = "adv-sess-lock"; // LockDuration PT5S
        await using var client = Adv.Client();
        await Adv.SendMany(client, queue, 2, i => i == 0 ? "kept" : "lost");
        await using var kept = await client.AcceptSessionAsync(queue, "kept");
        await using var lost = await client.AcceptSessionAsync(queue, "lost");
        var keptMsg = await kept.ReceiveMessageAsync(TimeSpan.FromSeconds(2));
        var lostMsg = await lost.ReceiveMessageAsync(TimeSpan.FromSeconds(2));
        Assert.NotNull(keptMsg);
        Assert.NotNull(lostMsg);
        for (var i = 0; i < 3; i++)
        {
            await Task.Delay(2500);
            await kept.RenewSessionLockAsync();
        }
        // 7.5 s after the accept: past the 5 s session lock of the one that was not renewed.
        await kept.CompleteMessageAsync(keptMsg);
        // The lost one: the service detached its link with com.microsoft:session-lock-lost when the lock ran out,
        // and the SDK closes a session receiver whose link is gone, so every later call says it is closed.
        Assert.True(lost.IsClosed, "the receiver whose session lock expired is still open");
        await Assert.ThrowsAsync<ObjectDisposedException>(() => lost.CompleteMessageAsync(lostMsg));
        await Assert.ThrowsAsync<ObjectDisposedException>(() => lost.RenewSessionLockAsync());
        // The session is free again: its message comes back to the next receiver.
        await using var again = await client.AcceptSessionAsync(queue, "lost");
        var back = await again.ReceiveMessageAsync(TimeSpan.FromSeconds(2));
        Assert.NotNull(back);
        Assert.Equal(lostMsg.MessageId, back.MessageId);
        await again.CompleteMessageAsync(back);
    }

    [Fact]
    public async Task ListsMessageSessionsAcrossPages()
    {
        const string queue = "adv-sess-list";
        const int withMessages = 130;
        await using var client = Adv.Client();
        var before = DateTimeOffset.UtcNow.AddSeconds(-1);
        await Adv.SendMany(client, queue, withMessages, i => $"m{i:D3}");
        // A session with state and no messages.
        await using (var stateOnly = await client.AcceptSessionAsync(queue, "state-only"))
            await stateOnly.SetSessionStateAsync(new BinaryData("x"));
        var all = new List<string>();
        await foreach (var id in client.GetMessageSessionsAsync(queue)) all.Add(id);
        // "sessions that have active messages or session state" (7.21.0's documentation of the no-filter overload).
        Assert.Equal(withMessages + 1, all.Count);
        Assert.Equal(all.Count, all.Distinct().Count());
        Assert.Contains("state-only", all);
        Assert.Contains("m129", all);
        var updated = new List<string>();
        await foreach (var id in client.GetMessageSessionsAsync(queue, before)) updated.Add(id);
        // With a time: "sessions whose session state was set or updated after the specified time" (7.21.0's
        // documentation); messages arriving in a session do not update its state.
        Assert.Equal(new[] { "state-only" }, updated);
        var none = new List<string>();
        await foreach (var id in client.GetMessageSessionsAsync(queue, DateTimeOffset.UtcNow.AddMinutes(5))) none.Add(id);
        Assert.Empty(none);
    }

    [Fact]
    public async Task NonExclusiveSessionIsDeclinedAsANamespaceWithoutItDeclinesIt()
    {
        const string queue = "adv-sess-nonexcl";
        await using var client = Adv.Client(o => o.RetryOptions = Adv.NoRetry());
        await Adv.SendMany(client, queue, 1, _ => "ne");
        var options = new ServiceBusSessionReceiverOptions { EnableNonExclusiveSession = true };
        await Assert.ThrowsAsync<NotSupportedException>(() => client.AcceptSessionAsync(queue, "ne", options));
        await Assert.ThrowsAsync<NotSupportedException>(() => client.AcceptNextSessionAsync(queue, options));
        // The decline leaves the session free for an exclusive receiver.
        await using var exclusive = await client.AcceptSessionAsync(queue, "ne");
        Assert.True(exclusive.IsSessionExclusive);
        var m = await exclusive.ReceiveMessageAsync(TimeSpan.FromSeconds(2));
        Assert.NotNull(m);
        await exclusive.CompleteMessageAsync(m);
    }
}
