using Azure.Messaging.ServiceBus;
using Xunit;

namespace Peeklock.DotNet.Tests.Advanced;

/// <summary>
/// The connection string without UseDevelopmentEmulator (amqps, the local CA trusted the way .NET on Linux trusts
/// one: SSL_CERT_FILE, set by the wrapper to the system bundle plus the broker's CA) and AMQP over WebSockets.
/// </summary>
public class TransportTests
{
    private const string KeyPart = "SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=" + Broker.Key;

    private static async Task RoundTrip(ServiceBusClient client, string queue)
    {
        await using var sender = client.CreateSender(queue);
        var body = Guid.NewGuid().ToString();
        await sender.SendMessageAsync(new ServiceBusMessage(body));
        await using var receiver = client.CreateReceiver(queue);
        var m = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(10));
        Assert.Equal(body, m?.Body.ToString());
        await receiver.CompleteMessageAsync(m!);
    }

    private static ServiceBusClientOptions Options(ServiceBusTransportType transport, Uri? custom) => new()
    {
        TransportType = transport,
        CustomEndpointAddress = custom,
        RetryOptions = Adv.NoRetry(15),
    };

    [Fact]
    public async Task AmqpsWithTheLocalCaInTheSystemTrust()
    {
        Assert.False(string.IsNullOrEmpty(Environment.GetEnvironmentVariable("SSL_CERT_FILE")), "the wrapper sets SSL_CERT_FILE");
        // A cloud-style string: the host is the namespace; the socket goes to the TLS port (an Endpoint port alone
        // is not dialled without the emulator flag: amqps goes to 5671 unless CustomEndpointAddress says otherwise).
        await using var client = new ServiceBusClient($"Endpoint=sb://localhost/;{KeyPart}",
            Options(ServiceBusTransportType.AmqpTcp, new Uri($"sb://localhost:{Broker.TlsPort}")));
        await RoundTrip(client, "adv-tls");
    }

    [Fact]
    public async Task WebSocketsOnTheEmulatorString()
    {
        // ws://127.0.0.1:<AMQP port>/$servicebus/websocket/ with subprotocol "amqp".
        await using var client = new ServiceBusClient(Broker.ConnectionString, Options(ServiceBusTransportType.AmqpWebSockets, null));
        await RoundTrip(client, "adv-ws");
    }

    [Fact]
    public async Task SecureWebSocketsWithTheLocalCaInTheSystemTrust()
    {
        // wss://localhost:<TLS port>/$servicebus/websocket/: no CertificateValidationCallback applies to WebSockets.
        await using var client = new ServiceBusClient($"Endpoint=sb://localhost/;{KeyPart}",
            Options(ServiceBusTransportType.AmqpWebSockets, new Uri($"sb://localhost:{Broker.TlsPort}")));
        await RoundTrip(client, "adv-ws");
    }
}
