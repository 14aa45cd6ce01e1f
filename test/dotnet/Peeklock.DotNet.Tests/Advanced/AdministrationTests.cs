using Azure;
using Azure.Messaging.ServiceBus;
using Azure.Messaging.ServiceBus.Administration;
using Xunit;

namespace Peeklock.DotNet.Tests.Advanced;

/// <summary>ServiceBusAdministrationClient over plain HTTP (HTTP port, AMQP port) and HTTPS with the local CA trusted.</summary>
public class AdministrationTests
{
    private const string KeyPart = "SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=" + Broker.Key;

    /// <summary>An administration client for one way of reaching the broker.</summary>
    public static ServiceBusAdministrationClient Admin(string via, string key = Broker.Key)
    {
        var keyPart = $"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}";
        var options = new ServiceBusAdministrationClientOptions();
        options.Retry.MaxRetries = 0;
        options.Retry.NetworkTimeout = TimeSpan.FromSeconds(15);
        return via switch
        {
            // .NET >= 7.20.1 with the emulator flag: plain HTTP to the Endpoint's port.
            "http-port" => new ServiceBusAdministrationClient($"Endpoint=sb://127.0.0.1:{Broker.HttpPort};{keyPart};UseDevelopmentEmulator=true", options),
            "amqp-port" => new ServiceBusAdministrationClient($"Endpoint=sb://127.0.0.1:{Broker.AmqpPort};{keyPart};UseDevelopmentEmulator=true", options),
            // Without the flag: HTTPS to the Endpoint's port, trusted through SSL_CERT_FILE (the wrapper sets it).
            "https" => new ServiceBusAdministrationClient($"Endpoint=sb://localhost:{Broker.TlsPort};{keyPart}", options),
            _ => throw new ArgumentException(via),
        };
    }

    [Theory]
    [InlineData("http-port")]
    [InlineData("amqp-port")]
    [InlineData("https")]
    public async Task EveryEntityKindRoundTrips(string via)
    {
        var admin = Admin(via);
        var q = $"adv-admin-{via}-q";
        var t = $"adv-admin-{via}-t";
        const string s = "sub";

        // Queues.
        var created = (await admin.CreateQueueAsync(new CreateQueueOptions(q) { MaxDeliveryCount = 7, LockDuration = TimeSpan.FromSeconds(45) })).Value;
        Assert.Equal(q, created.Name);
        Assert.Equal(7, created.MaxDeliveryCount);
        Assert.True((await admin.QueueExistsAsync(q)).Value);
        var got = (await admin.GetQueueAsync(q)).Value;
        Assert.Equal(TimeSpan.FromSeconds(45), got.LockDuration);
        got.MaxDeliveryCount = 9;
        Assert.Equal(9, (await admin.UpdateQueueAsync(got)).Value.MaxDeliveryCount);
        Assert.Equal(9, (await admin.GetQueueAsync(q)).Value.MaxDeliveryCount);
        Assert.Contains(q, await Names(admin.GetQueuesAsync(), p => p.Name));
        Assert.Equal(0, (await admin.GetQueueRuntimePropertiesAsync(q)).Value.TotalMessageCount);

        // Topics, subscriptions, rules.
        await admin.CreateTopicAsync(new CreateTopicOptions(t) { DefaultMessageTimeToLive = TimeSpan.FromHours(1) });
        Assert.True((await admin.TopicExistsAsync(t)).Value);
        var topic = (await admin.GetTopicAsync(t)).Value;
        Assert.Equal(TimeSpan.FromHours(1), topic.DefaultMessageTimeToLive);
        topic.DefaultMessageTimeToLive = TimeSpan.FromHours(2);
        Assert.Equal(TimeSpan.FromHours(2), (await admin.UpdateTopicAsync(topic)).Value.DefaultMessageTimeToLive);
        Assert.Contains(t, await Names(admin.GetTopicsAsync(), p => p.Name));

        await admin.CreateSubscriptionAsync(new CreateSubscriptionOptions(t, s) { MaxDeliveryCount = 3 });
        Assert.True((await admin.SubscriptionExistsAsync(t, s)).Value);
        var sub = (await admin.GetSubscriptionAsync(t, s)).Value;
        Assert.Equal(3, sub.MaxDeliveryCount);
        sub.MaxDeliveryCount = 4;
        Assert.Equal(4, (await admin.UpdateSubscriptionAsync(sub)).Value.MaxDeliveryCount);
        Assert.Equal(new[] { s }, await Names(admin.GetSubscriptionsAsync(t), p => p.SubscriptionName));

        var rules = await Names(admin.GetRulesAsync(t, s), r => r.Name);
        Assert.Equal(new[] { RuleProperties.DefaultRuleName }, rules);
        await admin.CreateRuleAsync(t, s, new CreateRuleOptions("red", new SqlRuleFilter("color = 'red'")) { Action = new SqlRuleAction("SET seen = 1") });
        await admin.CreateRuleAsync(t, s, new CreateRuleOptions("corr", new CorrelationRuleFilter { Subject = "x", ApplicationProperties = { ["k"] = "v" } }));
        Assert.True((await admin.RuleExistsAsync(t, s, "red")).Value);
        var rule = (await admin.GetRuleAsync(t, s, "red")).Value;
        Assert.Equal("color = 'red'", Assert.IsType<SqlRuleFilter>(rule.Filter).SqlExpression);
        Assert.Equal("SET seen = 1", Assert.IsType<SqlRuleAction>(rule.Action).SqlExpression);
        var corr = Assert.IsType<CorrelationRuleFilter>((await admin.GetRuleAsync(t, s, "corr")).Value.Filter);
        Assert.Equal("x", corr.Subject);
        Assert.Equal("v", corr.ApplicationProperties["k"]);
        rule.Filter = new SqlRuleFilter("color = 'blue'");
        Assert.Equal("color = 'blue'", Assert.IsType<SqlRuleFilter>((await admin.UpdateRuleAsync(t, s, rule)).Value.Filter).SqlExpression);
        Assert.Equal(new[] { "$Default", "corr", "red" }, (await Names(admin.GetRulesAsync(t, s), r => r.Name)).Order(StringComparer.Ordinal));
        await admin.DeleteRuleAsync(t, s, "red");
        Assert.False((await admin.RuleExistsAsync(t, s, "red")).Value);

        var topicRt = (await admin.GetTopicRuntimePropertiesAsync(t)).Value;
        Assert.Equal(1, topicRt.SubscriptionCount);
        // 7.21 (api-version 2024-05): filters across the subscriptions, $Default's true filter counted as SQL.
        Assert.Equal(1, topicRt.SqlFilterCount);
        Assert.Equal(1, topicRt.CorrelationFilterCount);

        // Deletes.
        await admin.DeleteSubscriptionAsync(t, s);
        Assert.False((await admin.SubscriptionExistsAsync(t, s)).Value);
        await admin.DeleteTopicAsync(t);
        Assert.False((await admin.TopicExistsAsync(t)).Value);
        await admin.DeleteQueueAsync(q);
        Assert.False((await admin.QueueExistsAsync(q)).Value);
    }

    [Theory]
    [InlineData("http-port")]
    [InlineData("https")]
    public async Task EachErrorMapsAsTheClientMapsIt(string via)
    {
        var admin = Admin(via);
        var q = $"adv-admin-{via}-err";
        await admin.CreateQueueAsync(q);
        try
        {
            // 409 -> MessagingEntityAlreadyExists
            var dup = await Assert.ThrowsAsync<ServiceBusException>(() => admin.CreateQueueAsync(q));
            Assert.Equal(ServiceBusFailureReason.MessagingEntityAlreadyExists, dup.Reason);
            // 404 -> MessagingEntityNotFound (get, update, delete)
            var missing = await Assert.ThrowsAsync<ServiceBusException>(() => admin.GetQueueAsync("adv-admin-none"));
            Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, missing.Reason);
            var delMissing = await Assert.ThrowsAsync<ServiceBusException>(() => admin.DeleteTopicAsync("adv-admin-none"));
            Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, delMissing.Reason);
            var subMissing = await Assert.ThrowsAsync<ServiceBusException>(() => admin.GetSubscriptionAsync("adv-admin-none", "s"));
            Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, subMissing.Reason);
            Assert.False((await admin.QueueExistsAsync("adv-admin-none")).Value);
            // An update of a queue deleted meanwhile.
            var stale = (await admin.CreateQueueAsync($"{q}-gone")).Value;
            await admin.DeleteQueueAsync(stale.Name);
            var updMissing = await Assert.ThrowsAsync<ServiceBusException>(() => admin.UpdateQueueAsync(stale));
            Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, updMissing.Reason);
            // 401 -> UnauthorizedAccessException
            await Assert.ThrowsAsync<UnauthorizedAccessException>(() => Admin(via, key: "wrong-key").GetQueueAsync(q));
            // 400 -> ArgumentException: a SQL filter the service cannot parse.
            await admin.CreateTopicAsync($"{q}-t");
            await admin.CreateSubscriptionAsync($"{q}-t", "s");
            await Assert.ThrowsAsync<ArgumentException>(() => admin.CreateRuleAsync($"{q}-t", "s", new CreateRuleOptions("bad", new SqlRuleFilter("this is ((( not sql"))));
            var ruleMissing = await Assert.ThrowsAsync<ServiceBusException>(() => admin.GetRuleAsync($"{q}-t", "s", "nope"));
            Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, ruleMissing.Reason);
            var ruleDup = await Assert.ThrowsAsync<ServiceBusException>(() => admin.CreateRuleAsync($"{q}-t", "s", new CreateRuleOptions(RuleProperties.DefaultRuleName)));
            Assert.Equal(ServiceBusFailureReason.MessagingEntityAlreadyExists, ruleDup.Reason);
            await admin.DeleteTopicAsync($"{q}-t");
        }
        finally
        {
            await admin.DeleteQueueAsync(q);
        }
    }

    [Fact]
    public async Task ListsQueuesAcrossPages()
    {
        var admin = Admin("http-port");
        var names = Enumerable.Range(0, 105).Select(i => $"adv-page-{i:D3}").ToList();
        foreach (var chunk in names.Chunk(8)) await Task.WhenAll(chunk.Select(n => admin.CreateQueueAsync(n)));
        var listed = await Names(admin.GetQueuesAsync(), p => p.Name);
        Assert.Equal(listed.Count, listed.Distinct().Count());
        Assert.All(names, n => Assert.Contains(n, listed));
        var runtime = await Names(admin.GetQueuesRuntimePropertiesAsync(), p => p.Name);
        Assert.All(names, n => Assert.Contains(n, runtime));
        foreach (var chunk in names.Chunk(8)) await Task.WhenAll(chunk.Select(n => admin.DeleteQueueAsync(n)));
    }

    [Fact]
    public async Task ListsTopicsSubscriptionsAndRulesAcrossPages()
    {
        var admin = Admin("amqp-port");
        const int n = 101; // one more than the client's page of 100
        var topics = Enumerable.Range(0, n).Select(i => $"adv-page-t{i:D3}").ToList();
        foreach (var chunk in topics.Chunk(8)) await Task.WhenAll(chunk.Select(t => admin.CreateTopicAsync(t)));
        var subs = Enumerable.Range(0, n).Select(i => $"s{i:D3}").ToList();
        foreach (var chunk in subs.Chunk(8)) await Task.WhenAll(chunk.Select(s => admin.CreateSubscriptionAsync(topics[0], s)));
        var rules = Enumerable.Range(0, n).Select(i => $"r{i:D3}").ToList();
        foreach (var chunk in rules.Chunk(8))
            await Task.WhenAll(chunk.Select(r => admin.CreateRuleAsync(topics[0], subs[0], new CreateRuleOptions(r, new SqlRuleFilter($"n = {r.Length}")))));
        try
        {
            var listedTopics = await Names(admin.GetTopicsAsync(), t => t.Name);
            Assert.All(topics, t => Assert.Contains(t, listedTopics));
            Assert.Equal(listedTopics.Count, listedTopics.Distinct().Count());
            Assert.All(topics, t => Assert.Contains(t, listedTopics));
            var runtimeTopics = await Names(admin.GetTopicsRuntimePropertiesAsync(), t => t.Name);
            Assert.All(topics, t => Assert.Contains(t, runtimeTopics));
            Assert.Equal(subs, (await Names(admin.GetSubscriptionsAsync(topics[0]), s => s.SubscriptionName)).Order(StringComparer.Ordinal));
            Assert.Equal(n, (await Names(admin.GetSubscriptionsRuntimePropertiesAsync(topics[0]), s => s.SubscriptionName)).Distinct().Count());
            var listedRules = await Names(admin.GetRulesAsync(topics[0], subs[0]), r => r.Name);
            Assert.Equal(rules.Append(RuleProperties.DefaultRuleName).Order(StringComparer.Ordinal), listedRules.Order(StringComparer.Ordinal));
        }
        finally
        {
            foreach (var chunk in topics.Chunk(8)) await Task.WhenAll(chunk.Select(t => admin.DeleteTopicAsync(t)));
        }
    }

    [Fact]
    public async Task RuntimeCountsFollowTheDataPlane()
    {
        const string queue = "adv-rt";
        var admin = Admin("http-port");
        await using var client = Adv.Client();
        await using var sender = client.CreateSender(queue);
        await sender.SendMessagesAsync(new[] { new ServiceBusMessage("1"), new ServiceBusMessage("2"), new ServiceBusMessage("3") });
        await sender.ScheduleMessageAsync(new ServiceBusMessage("later"), DateTimeOffset.UtcNow.AddHours(1));
        await using var receiver = client.CreateReceiver(queue);
        var m = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(5));
        await receiver.DeadLetterMessageAsync(m, "why", "because");
        var rt = (await admin.GetQueueRuntimePropertiesAsync(queue)).Value;
        Assert.Equal(2, rt.ActiveMessageCount);
        Assert.Equal(1, rt.DeadLetterMessageCount);
        Assert.Equal(1, rt.ScheduledMessageCount);
        Assert.Equal(4, rt.TotalMessageCount);
        Assert.True(rt.SizeInBytes > 0);
        // A subscription's counts, and its topic's.
        await using (var toTopic = client.CreateSender("adv-rt-topic"))
            await toTopic.SendMessagesAsync(new[] { new ServiceBusMessage("a"), new ServiceBusMessage("b") });
        var subRt = (await admin.GetSubscriptionRuntimePropertiesAsync("adv-rt-topic", "s1")).Value;
        Assert.Equal(2, subRt.ActiveMessageCount);
        Assert.Equal(2, subRt.TotalMessageCount);
        Assert.Equal(0, subRt.DeadLetterMessageCount);
        var topicRt = (await admin.GetTopicRuntimePropertiesAsync("adv-rt-topic")).Value;
        Assert.Equal(1, topicRt.SubscriptionCount);
        Assert.True(topicRt.SizeInBytes > 0);
        var ns = (await admin.GetNamespacePropertiesAsync()).Value;
        Assert.Equal("sbemulatorns", ns.Name);
        Assert.Equal(MessagingSku.Standard, ns.MessagingSku);
    }

    private static async Task<List<string>> Names<T>(AsyncPageable<T> pages, Func<T, string> name) where T : notnull
    {
        var names = new List<string>();
        await foreach (var p in pages) names.Add(name(p));
        return names;
    }
}
