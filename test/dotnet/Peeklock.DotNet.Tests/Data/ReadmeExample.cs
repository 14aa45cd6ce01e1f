// README:begin
using Azure.Messaging.ServiceBus;
using Azure.Messaging.ServiceBus.Administration;
// README:end
using Xunit;

namespace Peeklock.DotNet.Tests.Data;

/// <summary>The README's .NET snippet ("Connecting"), which the README shows verbatim (test/readme/readme-example.test.ts checks it): it must compile and run.</summary>
public class ReadmeExample
{
    [Fact]
    public async Task RunsTheReadmeSnippet()
    {
        // README:begin
        var cs = Environment.GetEnvironmentVariable("PEEKLOCK_CONNECTION_STRING")
            ?? "Endpoint=sb://localhost:5672;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true";
        var admin = new ServiceBusAdministrationClient(cs);   // plain HTTP to the Endpoint port
        await admin.CreateQueueAsync("invoices");
        await using var client = new ServiceBusClient(cs);    // plain AMQP to the same port
        await client.CreateSender("invoices").SendMessageAsync(new ServiceBusMessage("hello"));
        await using var receiver = client.CreateReceiver("invoices");
        var message = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(10));
        Console.WriteLine(message.Body);                      // hello
        await receiver.CompleteMessageAsync(message);
        // README:end
        Assert.Equal("hello", message.Body.ToString());
        Assert.Null(await receiver.PeekMessageAsync());
        await admin.DeleteQueueAsync("invoices");
    }
}
