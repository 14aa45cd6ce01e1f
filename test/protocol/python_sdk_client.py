"""Drives Microsoft's Python SDK (azure-servicebus 7.8.2 over uamqp, Debian's python3-azure) against the broker
over amqps, trusting the broker's local CA through connection_verify. Prints one JSON object of what it saw.

Usage: python_sdk_client.py <tls-port> <ca-file> <queue> <session-queue> [websocket]

The Python SDK 7.x dials amqps on port 5671 always (custom_endpoint_address switches it to WebSockets), so a
broker on its default ports needs nothing else. The test broker listens on an ephemeral port instead: the one
line below that points the SDK's default port at it is the only concession, and changes nothing on the wire.
With `websocket`, the client is the WebSocket snippet of docs/clients.md instead: AMQP over wss to the given port, named
by custom_endpoint_address (no concession needed).
"""

import json
import sys
import time
from datetime import datetime, timedelta, timezone

import azure.servicebus._common._configuration as sb_configuration
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue, TransportType

port, ca, queue, session_queue = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
websocket = sys.argv[5:] == ["websocket"]
if not websocket:
    sb_configuration.DEFAULT_AMQPS_PORT = port  # the test broker's ephemeral TLS port (see above)

CONNECTION_STRING = "Endpoint=sb://localhost/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE"


def connect():
    """The client over amqps, or over AMQP-over-WebSockets (wss) to the given port."""
    if websocket:
        return ServiceBusClient.from_connection_string(
            CONNECTION_STRING,
            transport_type=TransportType.AmqpOverWebsocket,
            custom_endpoint_address="sb://localhost:%d" % port,
            connection_verify=ca,
        )
    return ServiceBusClient.from_connection_string(CONNECTION_STRING, connection_verify=ca)


def receive(receiver, count, wait=5):
    """Receives until `count` messages arrived or `wait` seconds passed (a batch may come back short)."""
    got, deadline = [], time.monotonic() + wait
    while len(got) < count and time.monotonic() < deadline:
        got += receiver.receive_messages(max_message_count=count - len(got), max_wait_time=1)
    return got


out = {}
with connect() as client:
    with client.get_queue_sender(queue) as sender:
        sender.send_messages(
            [
                ServiceBusMessage("one", message_id="p1", application_properties={"n": 1}),
                ServiceBusMessage("two", message_id="p2"),
                ServiceBusMessage("three", message_id="p3"),
            ]
        )
        with client.get_queue_receiver(queue) as peeker:
            out["peeked"] = [str(m.message_id) for m in peeker.peek_messages(max_message_count=10)]
        now = datetime.now(timezone.utc)
        cancelled = sender.schedule_messages(ServiceBusMessage("never", message_id="p5"), now + timedelta(hours=1))
        sender.cancel_scheduled_messages(cancelled)

    with client.get_queue_receiver(queue) as receiver:
        first = receive(receiver, 3)
        out["received"] = sorted(str(m) for m in first)
        by_id = {str(m.message_id): m for m in first}
        out["props"] = {k.decode() if isinstance(k, bytes) else k: v for k, v in (by_id["p1"].application_properties or {}).items()}
        before = by_id["p1"].locked_until_utc
        time.sleep(0.2)
        renewed = receiver.renew_message_lock(by_id["p1"])
        out["renewed"] = renewed > before
        receiver.complete_message(by_id["p1"])
        receiver.abandon_message(by_id["p2"])
        receiver.dead_letter_message(by_id["p3"], reason="bad", error_description="from python")
        again = receive(receiver, 1)
        out["redelivered"] = [{"id": str(m.message_id), "deliveryCount": m.delivery_count} for m in again]
        for m in again:
            receiver.complete_message(m)
        # Scheduled only now, so that on a loaded machine it cannot come due before the abandoned p2 is back.
        with client.get_queue_sender(queue) as sender:
            due_at = datetime.now(timezone.utc) + timedelta(seconds=1)
            due = sender.schedule_messages(ServiceBusMessage("later", message_id="p4"), due_at)
            out["scheduled"] = len(due) == 1 and due[0] > 0
        later = receive(receiver, 1, wait=8)
        out["scheduledArrived"] = [str(m.message_id) for m in later]
        for m in later:
            receiver.complete_message(m)
        out["leftover"] = [str(m.message_id) for m in receiver.peek_messages(max_message_count=10)]

    # Deferral: the deferred message comes back by sequence number under a lock, and completes.
    with client.get_queue_sender(queue) as sender:
        sender.send_messages(ServiceBusMessage("deferred", message_id="p6"))
    with client.get_queue_receiver(queue) as receiver:
        (m,) = receive(receiver, 1)
        seq = m.sequence_number
        receiver.defer_message(m)
        (d,) = receiver.receive_deferred_messages([seq])
        out["deferred"] = {"id": str(d.message_id), "hasLock": d.lock_token is not None}
        receiver.complete_message(d)
        out["afterDeferred"] = [str(x.message_id) for x in receiver.peek_messages(max_message_count=10)]

    with client.get_queue_receiver(queue, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        dead = receive(dlq, 1)
        out["dead"] = [{"id": str(m.message_id), "reason": m.dead_letter_reason, "description": m.dead_letter_error_description} for m in dead]
        for m in dead:
            dlq.complete_message(m)

    # Sessions: a session receiver gets its session's messages in order and keeps session state.
    with client.get_queue_sender(session_queue) as sender:
        sender.send_messages([ServiceBusMessage("s%d" % i, session_id="alpha") for i in range(3)])
        sender.send_messages(ServiceBusMessage("other", session_id="beta"))
    with client.get_queue_receiver(session_queue, session_id="alpha") as receiver:
        got = receive(receiver, 3)
        receiver.session.set_state("step-2")
        out["session"] = {"bodies": [str(m) for m in got], "ids": sorted({m.session_id for m in got}), "state": str(receiver.session.get_state(), "utf-8")}
        for m in got:
            receiver.complete_message(m)

print(json.dumps(out))
