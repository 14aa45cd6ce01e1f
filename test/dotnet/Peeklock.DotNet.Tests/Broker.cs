using Azure.Messaging.ServiceBus;

namespace Peeklock.DotNet.Tests;

/// <summary>The broker the vitest wrapper started: its address and entities come in PEEKLOCK_* variables.</summary>
public static class Broker
{
    /// <summary>The emulator-style connection string (plain AMQP, UseDevelopmentEmulator=true).</summary>
    public static string ConnectionString => Env("PEEKLOCK_CONNECTION_STRING");

    /// <summary>The AMQP port (plain AMQP, also HTTP and TLS by first byte).</summary>
    public static int AmqpPort => int.Parse(Env("PEEKLOCK_AMQP_PORT"));

    /// <summary>The HTTP port (Service Bus administration API over plain HTTP).</summary>
    public static int HttpPort => int.Parse(Env("PEEKLOCK_HTTP_PORT"));

    /// <summary>The amqps port (TLS with the broker's local CA).</summary>
    public static int TlsPort => int.Parse(Env("PEEKLOCK_TLS_PORT"));

    /// <summary>The local CA's certificate (PEM), for TLS tests.</summary>
    public static string CaCertPath => Env("PEEKLOCK_CA_CERT");

    /// <summary>The namespace's root key (the emulator's well-known key).</summary>
    public const string Key = "SAS_KEY_VALUE";

    /// <summary>A client with retries kept short, so a failure shows in seconds, not minutes.</summary>
    public static ServiceBusClient Client(ServiceBusClientOptions? options = null) =>
        new(ConnectionString, options ?? new ServiceBusClientOptions
        {
            RetryOptions = new ServiceBusRetryOptions { MaxRetries = 1, Delay = TimeSpan.FromMilliseconds(200), TryTimeout = TimeSpan.FromSeconds(20) },
        });

    private static string Env(string name) =>
        Environment.GetEnvironmentVariable(name) ?? throw new InvalidOperationException($"{name} is not set: run these tests through npm test (test/protocol/dotnet-sdk.test.ts).");
}
