"""Drives peeklock's transactions with Apache Qpid Proton's own transaction API (a client not built on rhea).
Usage: proton_txn_client.py MODE PORT, MODE one of:
  commit    receive `in` from q; in one transaction send 10 messages via q to `out` (send-via) and complete `in`; commit
  rollback  receive `in` from q; in one transaction send 2 messages to q and complete `in`; roll back
  dropped   declare and send in a transaction, drop the connection, then discharge that txn-id from a new connection
  unknown   discharge a txn-id the broker never declared
Prints one JSON object with what happened."""
import json
import sys

from proton import Message, symbol
from proton.handlers import MessagingHandler, TransactionHandler
from proton.reactor import Container, SenderOption

MODE, PORT = sys.argv[1], sys.argv[2]
URL = "amqp://127.0.0.1:%s" % PORT
VIA = symbol("com.microsoft:transfer-destination-address")


class SendVia(SenderOption):
    """Names the destination in the attach properties (applied before the link opens)."""

    def __init__(self, destination):
        self.destination = destination

    def apply(self, sender):
        sender.properties = {VIA: self.destination}


class Client(MessagingHandler, TransactionHandler):
    def __init__(self):
        super(Client, self).__init__(prefetch=0, auto_accept=False)
        self.out = {}
        self.txn = None
        self.received = None
        self.conn = None
        self.sender = None
        self.old_id = None

    def connect(self, container):
        return container.connect(URL, user="RootManageSharedAccessKey", password="SAS_KEY_VALUE",
                                 allowed_mechs="PLAIN")

    def on_start(self, event):
        self.container = event.container
        self.conn = self.connect(event.container)
        if MODE in ("commit", "rollback"):
            self.receiver = event.container.create_receiver(self.conn, "q")
            self.receiver.flow(1)
        if MODE == "commit":
            # Send-via: the link's target is the via entity q, the destination an attach property.
            self.sender = event.container.create_sender(self.conn, "q", name="via-out", handler=self,
                                                        options=SendVia("out"))
        elif MODE in ("rollback", "dropped"):
            self.sender = event.container.create_sender(self.conn, "q", name="to-q", handler=self)
        # Settle dispositions at once in a rollback, so Proton does not release the input after the abort.
        event.container.declare_transaction(self.conn, handler=self, settle_before_discharge=(MODE == "rollback"))

    def on_message(self, event):
        self.received = event.delivery
        self.out["received"] = event.message.id
        self.work()

    def on_transaction_declared(self, event):
        if self.old_id is not None:
            # A transaction declared on the new connection, discharged under the old (dropped) id.
            event.transaction.id = self.old_id
            event.transaction.commit()
            return
        self.txn = event.transaction
        if MODE == "unknown":
            self.txn.id = b"never-declared"
            self.txn.commit()
            return
        if MODE == "dropped":
            self.txn.send(self.sender, Message(id="staged", body="staged"))
            self.old_id = self.txn.id
            self.out["declared"] = True
            self.conn.close()
            self.conn = self.connect(self.container)
            self.container.declare_transaction(self.conn, handler=self)
            return
        self.work()

    def work(self):
        if self.txn is None or self.received is None:
            return
        n = 10 if MODE == "commit" else 2
        for i in range(n):
            self.txn.send(self.sender, Message(id="out%d" % i, body="out %d" % i))
        self.txn.accept(self.received)
        if MODE == "commit":
            self.txn.commit()
        else:
            self.txn.abort()

    def on_transaction_committed(self, event):
        self.finish(committed=True)

    def on_transaction_aborted(self, event):
        self.finish(aborted=True)

    def on_transaction_commit_failed(self, event):
        cond = event.delivery.remote.condition
        self.finish(commitFailed=True, condition=cond.name if cond else None)

    def on_transaction_declare_failed(self, event):
        self.finish(declareFailed=True)

    def finish(self, **kw):
        self.out.update(kw)
        print(json.dumps(self.out))
        sys.stdout.flush()
        self.conn.close()


Container(Client()).run()
