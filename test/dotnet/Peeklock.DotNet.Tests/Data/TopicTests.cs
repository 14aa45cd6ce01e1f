using Azure.Messaging.ServiceBus;
using Azure.Messaging.ServiceBus.Administration;
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>A topic fanning out through SQL and correlation rules with actions, managed with ServiceBusRuleManager.</summary>
public class TopicTests
{
    private const string Topic = "data-topic";

    [Fact]
    public async Task FansOutThroughRulesTheRuleManagerCreates()
    {
        await using var client = Broker.Client();
        await using var sqlRules = client.CreateRuleManager(Topic, "sql");
        await using var corrRules = client.CreateRuleManager(Topic, "corr");

        var defaults = await ToListAsync(sqlRules.GetRulesAsync());
        var dflt = Assert.Single(defaults);
        Assert.Equal(RuleProperties.DefaultRuleName, dflt.Name);
        Assert.IsType<TrueRuleFilter>(dflt.Filter);
        Assert.Null(dflt.Action);

        await sqlRules.DeleteRuleAsync(RuleProperties.DefaultRuleName);
        await sqlRules.CreateRuleAsync(new CreateRuleOptions("red", new SqlRuleFilter("color = 'red' AND qty > 1")) { Action = new SqlRuleAction("SET tagged = 'sql'; SET qty = qty * 10") });
        await corrRules.DeleteRuleAsync(RuleProperties.DefaultRuleName);
        var corr = new CorrelationRuleFilter { Subject = "order", ContentType = "application/json" };
        corr.ApplicationProperties["color"] = "blue";
        await corrRules.CreateRuleAsync(new CreateRuleOptions("blue-orders", corr) { Action = new SqlRuleAction("SET tagged = 'corr'") });
        await corrRules.CreateRuleAsync("by-correlation-id", new CorrelationRuleFilter("vip"));

        var sqlList = await ToListAsync(sqlRules.GetRulesAsync());
        var red = Assert.Single(sqlList);
        Assert.Equal("red", red.Name);
        Assert.Equal("color = 'red' AND qty > 1", Assert.IsType<SqlRuleFilter>(red.Filter).SqlExpression);
        Assert.Equal("SET tagged = 'sql'; SET qty = qty * 10", Assert.IsType<SqlRuleAction>(red.Action).SqlExpression);

        var corrList = (await ToListAsync(corrRules.GetRulesAsync())).OrderBy(r => r.Name).ToList();
        Assert.Equal(new[] { "blue-orders", "by-correlation-id" }, corrList.Select(r => r.Name));
        var blue = Assert.IsType<CorrelationRuleFilter>(corrList[0].Filter);
        Assert.Equal("order", blue.Subject);
        Assert.Equal("application/json", blue.ContentType);
        Assert.Equal("blue", blue.ApplicationProperties["color"]);
        Assert.Equal("SET tagged = 'corr'", Assert.IsType<SqlRuleAction>(corrList[0].Action).SqlExpression);
        Assert.Equal("vip", Assert.IsType<CorrelationRuleFilter>(corrList[1].Filter).CorrelationId);
        Assert.Null(corrList[1].Action);

        var dupe = await Assert.ThrowsAsync<ServiceBusException>(() => corrRules.CreateRuleAsync("by-correlation-id", new CorrelationRuleFilter("other")));
        Assert.Equal(ServiceBusFailureReason.MessagingEntityAlreadyExists, dupe.Reason);
        var missing = await Assert.ThrowsAsync<ServiceBusException>(() => corrRules.DeleteRuleAsync("no-such-rule"));
        Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, missing.Reason);

        await using var sender = client.CreateSender(Topic);
        await sender.SendMessagesAsync(new[]
        {
            new ServiceBusMessage("red") { MessageId = "red", ApplicationProperties = { ["color"] = "red", ["qty"] = 2, ["amount"] = 500 } },
            new ServiceBusMessage("blue") { MessageId = "blue", Subject = "order", ContentType = "application/json", ApplicationProperties = { ["color"] = "blue" } },
            new ServiceBusMessage("vip") { MessageId = "vip", CorrelationId = "vip" },
            new ServiceBusMessage("green") { MessageId = "green", ApplicationProperties = { ["color"] = "green", ["amount"] = 5 } },
        });

        var all = await Drain(client, "all", 4);
        Assert.Equal(new[] { "red", "blue", "vip", "green" }, all.Select(m => m.MessageId));
        Assert.All(all, m => Assert.False(m.ApplicationProperties.ContainsKey("tagged")));

        var sql = Assert.Single(await Drain(client, "sql", 1));
        Assert.Equal("red", sql.MessageId);
        Assert.Equal("sql", sql.ApplicationProperties["tagged"]);
        // Integer constants are Int64 and int * long is a long; SET converts only where C# converts implicitly, and
        // long to int is not implicit, so qty arrives as a long (SQL rule action and SQL filter syntax docs).
        Assert.Equal(20L, Assert.IsType<long>(sql.ApplicationProperties["qty"]));
        // A property the action did not touch keeps its type.
        Assert.Equal(500, Assert.IsType<int>(sql.ApplicationProperties["amount"]));

        var viaCorr = await Drain(client, "corr", 2);
        Assert.Equal(new[] { "blue", "vip" }, viaCorr.Select(m => m.MessageId));
        Assert.Equal("corr", viaCorr[0].ApplicationProperties["tagged"]);
        Assert.False(viaCorr[1].ApplicationProperties.ContainsKey("tagged"));

        // The rule from Config.json (SQL filter with an action).
        var big = Assert.Single(await Drain(client, "configured", 1));
        Assert.Equal("red", big.MessageId);
        Assert.Equal("big", big.ApplicationProperties["size"]);
    }

    [Fact]
    public async Task TrueAndFalseRuleFiltersReadBackAsThemselves()
    {
        const string topic = "data-topic-bool", sub = "s";
        await using var client = Broker.Client();
        await using var rules = client.CreateRuleManager(topic, sub);
        // The SDK sends both as SQL filters ("1=1", "1=0": they subclass SqlRuleFilter); Service Bus reads them back
        // as the true and false filters.
        await rules.CreateRuleAsync("yes", new TrueRuleFilter());
        await rules.CreateRuleAsync("no", new FalseRuleFilter());
        var admin = Advanced.AdministrationTests.Admin("http-port");
        await admin.CreateRuleAsync(topic, sub, new CreateRuleOptions("no-atom", new FalseRuleFilter()));
        await admin.CreateRuleAsync(topic, sub, new CreateRuleOptions("sql", new SqlRuleFilter("1 = 0")));

        var overAmqp = (await ToListAsync(rules.GetRulesAsync())).ToDictionary(r => r.Name);
        Assert.IsType<TrueRuleFilter>(overAmqp["yes"].Filter);
        Assert.IsType<FalseRuleFilter>(overAmqp["no"].Filter);
        Assert.IsType<FalseRuleFilter>(overAmqp["no-atom"].Filter);
        Assert.Equal("1 = 0", Assert.IsType<SqlRuleFilter>(overAmqp["sql"].Filter).SqlExpression);
        Assert.IsType<TrueRuleFilter>((await admin.GetRuleAsync(topic, sub, "yes")).Value.Filter);
        Assert.IsType<FalseRuleFilter>((await admin.GetRuleAsync(topic, sub, "no")).Value.Filter);
        Assert.IsType<FalseRuleFilter>((await admin.GetRuleAsync(topic, sub, "no-atom")).Value.Filter);
        Assert.Equal("1 = 0", Assert.IsType<SqlRuleFilter>((await admin.GetRuleAsync(topic, sub, "sql")).Value.Filter).SqlExpression);
    }

    /// <summary>Receives and deletes what a subscription holds, expecting <paramref name="count"/>, then checks it is empty.</summary>
    private static async Task<List<ServiceBusReceivedMessage>> Drain(ServiceBusClient client, string subscription, int count)
    {
        await using var receiver = client.CreateReceiver(Topic, subscription, new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        var got = await Receive.AtLeast(receiver, count);
        Assert.Null(await receiver.ReceiveMessageAsync(TimeSpan.FromMilliseconds(300)));
        return got;
    }

    private static async Task<List<T>> ToListAsync<T>(IAsyncEnumerable<T> items)
    {
        var list = new List<T>();
        await foreach (var item in items) list.Add(item);
        return list;
    }
}
