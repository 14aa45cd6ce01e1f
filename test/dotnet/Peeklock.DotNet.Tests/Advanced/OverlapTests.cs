using System.Collections.Concurrent;
using System.Net.Http;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Advanced;

/// <summary>
/// Issue 39: a processor whose handler outlives a 5 s lock (no auto-renewal) gets the message again on another
/// concurrent call while the first call is still working on it. peeklock names that an overlap and counts it in
/// peeklock_overlapping_deliveries_total; the first call's late complete still fails with MessageLockLost.
/// </summary>
public class OverlapTests
{
    private const string Queue = "adv-proc-overlap"; // LockDuration PT5S

    private static async Task<double> OverlapCounter()
    {
        using var http = new HttpClient();
        var text = await http.GetStringAsync($"http://127.0.0.1:{Broker.HttpPort}/metrics");
        var line = text.Split('\n').FirstOrDefault(l => l.StartsWith($"peeklock_overlapping_deliveries_total{{entity=\"{Queue}\"}}"));
        return line == null ? 0 : double.Parse(line.Split(' ').Last(), System.Globalization.CultureInfo.InvariantCulture);
    }

    [Fact]
    public async Task AHandlerSleepingPastTheLockOverlapsItsRedeliveryAndIsCounted()
    {
        var before = await OverlapCounter();
        await using var client = Adv.Client();
        await Adv.SendMany(client, Queue, 2);
        var lockLost = new ConcurrentBag<string>();
        var completed = new ConcurrentDictionary<string, int>();
        var slowDone = 0;
        var done = new TaskCompletionSource();
        await using var processor = client.CreateProcessor(Queue, new ServiceBusProcessorOptions
        {
            MaxConcurrentCalls = 4,
            AutoCompleteMessages = false,
            MaxAutoLockRenewalDuration = TimeSpan.Zero,
        });
        processor.ProcessMessageAsync += async args =>
        {
            var id = args.Message.MessageId;
            if (args.Message.DeliveryCount == 1)
            {
                // The first attempt outlives its 5 s lock; meanwhile an idle call receives the message again.
                await Task.Delay(TimeSpan.FromSeconds(7));
                try { await args.CompleteMessageAsync(args.Message); completed.AddOrUpdate(id, 1, (_, n) => n + 1); }
                catch (ServiceBusException e) when (e.Reason == ServiceBusFailureReason.MessageLockLost) { lockLost.Add(id); }
            }
            else
            {
                await args.CompleteMessageAsync(args.Message);
                completed.AddOrUpdate(id, 1, (_, n) => n + 1);
            }
            if (Interlocked.Increment(ref slowDone) == 4) done.TrySetResult();
        };
        processor.ProcessErrorAsync += _ => Task.CompletedTask;
        await processor.StartProcessingAsync();
        try { await Adv.Within(done.Task, 30, "both attempts of both messages"); }
        finally { await processor.StopProcessingAsync(); }
        Assert.Equal(2, completed.Count);
        Assert.Equal(2, lockLost.Count);
        Assert.True(await OverlapCounter() >= before + 2, $"overlaps counted: {await OverlapCounter() - before}");
    }

    private const string HolderQueue = "adv-history-holder"; // LockDuration PT30S

    // The explorer API takes the namespace's SAS, as the SDKs sign it (resource, key name, key).
    private static string Sas()
    {
        var parts = Broker.ConnectionString.Split(';', StringSplitOptions.RemoveEmptyEntries)
            .Select(p => p.Split('=', 2)).Where(p => p.Length == 2).ToDictionary(p => p[0], p => p[1]);
        var resource = Uri.EscapeDataString("http://127.0.0.1/");
        var expiry = DateTimeOffset.UtcNow.AddMinutes(10).ToUnixTimeSeconds();
        using var hmac = new HMACSHA256(Encoding.UTF8.GetBytes(parts["SharedAccessKey"]));
        var sig = Convert.ToBase64String(hmac.ComputeHash(Encoding.UTF8.GetBytes($"{resource}\n{expiry}")));
        return $"SharedAccessSignature sr={resource}&sig={Uri.EscapeDataString(sig)}&se={expiry}&skn={parts["SharedAccessKeyName"]}";
    }

    [Fact]
    public async Task TheReceiversIdentifierIsRecordedAsTheHolderOfItsAttempt()
    {
        await using var client = Adv.Client();
        await using (var sender = client.CreateSender(HolderQueue)) await sender.SendMessageAsync(new ServiceBusMessage("who") { MessageId = "who-1" });
        await using var receiver = client.CreateReceiver(HolderQueue, new ServiceBusReceiverOptions { Identifier = "dotnet-receiver-A" });
        var m = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(10));
        Assert.NotNull(m);
        using var http = new HttpClient();
        http.DefaultRequestHeaders.TryAddWithoutValidation("Authorization", Sas());
        var text = await http.GetStringAsync($"http://127.0.0.1:{Broker.HttpPort}/api/message?entity={HolderQueue}&seq={m!.SequenceNumber}");
        using var doc = JsonDocument.Parse(text);
        var holder = doc.RootElement.GetProperty("deliveries")[0].GetProperty("holder");
        Assert.Equal("dotnet-receiver-A", holder.GetProperty("receiver").GetString());
        await receiver.CompleteMessageAsync(m);
    }
}
