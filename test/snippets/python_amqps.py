import os

from azure.servicebus import ServiceBusClient, ServiceBusMessage

# amqps on port 5671, trusting the broker's CA (`peeklock cert --path`).
ca = os.environ.get("PEEKLOCK_CA", "data/tls/ca.crt")
cs = "Endpoint=sb://localhost/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE"
with ServiceBusClient.from_connection_string(cs, connection_verify=ca) as client:
    with client.get_queue_sender("orders") as sender:
        sender.send_messages(ServiceBusMessage("hello over amqps"))
    with client.get_queue_receiver("orders") as receiver:
        for msg in receiver.receive_messages(max_message_count=1, max_wait_time=5):
            print(str(msg))
            receiver.complete_message(msg)
