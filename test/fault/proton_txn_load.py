"""Transaction load for the kill -9 test: receives inputs from `in` and, for each, runs one transaction that sends
3 messages via `in` to `out` (send-via) and completes the input, with up to INFLIGHT transactions open at once.
Prints one JSON line per event (declare, committed, failed) until the broker goes away.
Usage: proton_txn_load.py PORT INFLIGHT"""
import json
import sys

from proton import Message, symbol
from proton.handlers import MessagingHandler, TransactionHandler
from proton.reactor import Container, SenderOption

PORT, INFLIGHT = sys.argv[1], int(sys.argv[2])
VIA = symbol("com.microsoft:transfer-destination-address")


def emit(**kw):
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


class SendVia(SenderOption):
    def apply(self, sender):
        sender.properties = {VIA: "out"}


class Load(MessagingHandler, TransactionHandler):
    def __init__(self):
        super(Load, self).__init__(prefetch=0, auto_accept=False)
        self.inputs = {}

    def on_start(self, event):
        self.container = event.container
        self.conn = event.container.connect("amqp://127.0.0.1:%s" % PORT, user="RootManageSharedAccessKey",
                                            password="SAS_KEY_VALUE", allowed_mechs="PLAIN", reconnect=False)
        self.receiver = event.container.create_receiver(self.conn, "in")
        self.sender = event.container.create_sender(self.conn, "in", name="via-out", options=SendVia())
        self.receiver.flow(INFLIGHT)

    def on_message(self, event):
        txn = self.container.declare_transaction(self.conn, handler=self)
        self.inputs[id(txn)] = (event.delivery, event.message.id)
        emit(ev="declare", id=event.message.id)

    def on_transaction_declared(self, event):
        txn = event.transaction
        delivery, key = self.inputs[id(txn)]
        for i in range(3):
            txn.send(self.sender, Message(id="%s-o%d" % (key, i), body="out"))
        txn.accept(delivery)
        txn.commit()

    def done(self, event, ev):
        delivery, key = self.inputs.pop(id(event.transaction), (None, None))
        emit(ev=ev, id=key)
        self.receiver.flow(1)

    def on_transaction_committed(self, event):
        self.done(event, "committed")

    def on_transaction_commit_failed(self, event):
        self.done(event, "failed")

    def on_transaction_declare_failed(self, event):
        self.done(event, "failed")

    def on_transport_error(self, event):
        emit(ev="gone")
        event.container.stop()

    def on_disconnected(self, event):
        emit(ev="gone")
        event.container.stop()


Container(Load()).run()
