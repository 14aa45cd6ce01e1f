using Azure.Messaging.ServiceBus;
using Azure.Messaging.ServiceBus.Administration;
using Xunit;

namespace Peeklock.DotNet.Tests.Advanced;

/// <summary>What the administration client reads back as Azure writes it: ForwardTo as an sb:// URI, and an entity's
/// own SAS rules, stored, echoed and honoured on the data plane.</summary>
public class AzureShapesTests
{
    [Fact]
    public async Task ForwardToIsAnsweredAsTheEntitysAbsoluteUri()
    {
        var admin = AdministrationTests.Admin("http-port");
        await admin.CreateQueueAsync("adv-shape-target");
        var created = (await admin.CreateQueueAsync(new CreateQueueOptions("adv-shape-source") { ForwardTo = "adv-shape-target", ForwardDeadLetteredMessagesTo = "adv-shape-target" })).Value;
        // Service Bus answers sb://<namespace host>/<name>; the host is the one the client addressed.
        Assert.Equal($"sb://127.0.0.1:{Broker.HttpPort}/adv-shape-target", created.ForwardTo);
        var got = (await admin.GetQueueAsync("adv-shape-source")).Value;
        Assert.Equal(created.ForwardTo, got.ForwardTo);
        Assert.Equal(created.ForwardTo, got.ForwardDeadLetteredMessagesTo);
        // Updating with the URI it was given keeps the forwarding (stored as the entity it names).
        Assert.Equal(created.ForwardTo, (await admin.UpdateQueueAsync(got)).Value.ForwardTo);
    }

    [Fact]
    public async Task AnEntitysSasRuleIsStoredEchoedAndOpensThatEntityOnly()
    {
        var admin = AdministrationTests.Admin("http-port");
        await admin.CreateQueueAsync("adv-shape-other");
        var rule = new SharedAccessAuthorizationRule("adv-shape-send", new[] { AccessRights.Send });
        var options = new CreateQueueOptions("adv-shape-ruled");
        options.AuthorizationRules.Add(rule);
        await admin.CreateQueueAsync(options);
        var echoed = Assert.IsType<SharedAccessAuthorizationRule>(Assert.Single((await admin.GetQueueAsync("adv-shape-ruled")).Value.AuthorizationRules));
        Assert.Equal("adv-shape-send", echoed.KeyName);
        Assert.Equal(rule.PrimaryKey, echoed.PrimaryKey);
        Assert.Equal(new[] { AccessRights.Send }, echoed.Rights);

        // An entity's rule signs tokens for that entity: the connection string names it (EntityPath), so the SDK's
        // token covers that entity, as with Azure's entity-level connection strings.
        var retries = new ServiceBusClientOptions { RetryOptions = new ServiceBusRetryOptions { MaxRetries = 0, TryTimeout = TimeSpan.FromSeconds(10) } };
        string For(string entity) => $"Endpoint=sb://127.0.0.1:{Broker.AmqpPort};SharedAccessKeyName=adv-shape-send;SharedAccessKey={rule.PrimaryKey};UseDevelopmentEmulator=true" + (entity == "" ? "" : $";EntityPath={entity}");
        await using (var client = new ServiceBusClient(For("adv-shape-ruled"), retries))
        {
            await client.CreateSender("adv-shape-ruled").SendMessageAsync(new ServiceBusMessage("with the queue's own key"));
            // The rule has Send only.
            await Assert.ThrowsAsync<UnauthorizedAccessException>(() => client.CreateReceiver("adv-shape-ruled").ReceiveMessageAsync(TimeSpan.FromSeconds(2)));
        }
        Assert.Equal(1, (await admin.GetQueueRuntimePropertiesAsync("adv-shape-ruled")).Value.ActiveMessageCount);
        // The same key opens no other entity, and not the namespace.
        await using (var other = new ServiceBusClient(For("adv-shape-other"), retries))
            await Assert.ThrowsAsync<UnauthorizedAccessException>(() => other.CreateSender("adv-shape-other").SendMessageAsync(new ServiceBusMessage("elsewhere")));
        await using (var wide = new ServiceBusClient(For(""), retries))
            await Assert.ThrowsAsync<UnauthorizedAccessException>(() => wide.CreateSender("adv-shape-other").SendMessageAsync(new ServiceBusMessage("elsewhere")));
        Assert.Equal(0, (await admin.GetQueueRuntimePropertiesAsync("adv-shape-other")).Value.ActiveMessageCount);
    }
}
