using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests;

/// <summary>The first thing any .NET user does: send one message and take it with a peek-lock receive.</summary>
public class SmokeTests
{
    [Fact]
    public async Task SendsReceivesAndCompletesOneMessage()
    {
        await using var client = Broker.Client();
        await using var sender = client.CreateSender("dotnet-smoke");
        await sender.SendMessageAsync(new ServiceBusMessage("hello from .NET") { MessageId = "m1" });
        await using var receiver = client.CreateReceiver("dotnet-smoke");
        var msg = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(10));
        Assert.NotNull(msg);
        Assert.Equal("hello from .NET", msg.Body.ToString());
        Assert.Equal("m1", msg.MessageId);
        Assert.Equal(1, msg.DeliveryCount);
        await receiver.CompleteMessageAsync(msg);
        Assert.Null(await receiver.PeekMessageAsync());
    }
}
