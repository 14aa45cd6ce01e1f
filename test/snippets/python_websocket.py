import os

from azure.servicebus import ServiceBusClient, ServiceBusMessage, TransportType

# AMQP over WebSockets (wss) to any peeklock port: 5671, 5672 or 5300.
port = os.environ.get("PEEKLOCK_PORT", "5671")
ca = os.environ.get("PEEKLOCK_CA", "data/tls/ca.crt")
cs = "Endpoint=sb://localhost/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE"
with ServiceBusClient.from_connection_string(
    cs,
    transport_type=TransportType.AmqpOverWebsocket,
    custom_endpoint_address="sb://localhost:" + port,
    connection_verify=ca,
) as client:
    with client.get_queue_sender("orders") as sender:
        sender.send_messages(ServiceBusMessage("hello over wss"))
    with client.get_queue_receiver("orders") as receiver:
        for msg in receiver.receive_messages(max_message_count=1, max_wait_time=5):
            print(str(msg))
            receiver.complete_message(msg)
