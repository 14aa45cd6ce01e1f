"""Sends one message with Microsoft's Python SDK (azure-servicebus 7.8.2 over uamqp) and retry_total=0, over amqps
or AMQP over wss, with the key given: the right one must send, a wrong one must end in ServiceBusError (the
refused put-token), never in a crash of uamqp's C code. Prints one JSON line: {"outcome": "sent"} or
{"outcome": "ServiceBusError", "message": ...}; any other exception is printed as it is and the exit code is 1.

Usage: python_sdk_auth.py <tls-port> <ca-file> <queue> <key> [websocket]

As in python_sdk_client.py, the one concession over amqps is pointing the SDK's default port 5671 at the test
broker's ephemeral TLS port; over wss the port goes in custom_endpoint_address.
"""

import json
import sys

import azure.servicebus._common._configuration as sb_configuration
from azure.servicebus import ServiceBusClient, ServiceBusMessage, TransportType
from azure.servicebus.exceptions import ServiceBusError

port, ca, queue, key = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
websocket = sys.argv[5:] == ["websocket"]
connection_string = "Endpoint=sb://localhost/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=" + key

options = {"connection_verify": ca, "retry_total": 0}
if websocket:
    options.update(transport_type=TransportType.AmqpOverWebsocket, custom_endpoint_address="sb://localhost:%d" % port)
else:
    sb_configuration.DEFAULT_AMQPS_PORT = port

try:
    with ServiceBusClient.from_connection_string(connection_string, **options) as client:
        with client.get_queue_sender(queue) as sender:
            sender.send_messages(ServiceBusMessage("auth-probe"))
    print(json.dumps({"outcome": "sent"}))
except ServiceBusError as err:
    print(json.dumps({"outcome": "ServiceBusError", "message": str(err)[:300]}))
