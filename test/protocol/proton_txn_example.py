# Receive one order, then in one transaction send its invoice via the orders queue to `invoices` and complete
# the order. Either both happen or neither. Usage: python3 proton_txn_example.py [PORT]
import sys

from proton import Message, symbol
from proton.handlers import MessagingHandler, TransactionHandler
from proton.reactor import Container, SenderOption

URL = "amqp://127.0.0.1:%s" % (sys.argv[1] if len(sys.argv) > 1 else "5672")


class SendVia(SenderOption):
    # Send-via: the link's target is the via entity; the destination is an attach property.
    def apply(self, sender):
        sender.properties = {symbol("com.microsoft:transfer-destination-address"): "invoices"}


class Invoicer(MessagingHandler, TransactionHandler):
    def __init__(self):
        super(Invoicer, self).__init__(prefetch=0, auto_accept=False)
        self.order = self.txn = None

    def on_start(self, event):
        self.conn = event.container.connect(URL, user="RootManageSharedAccessKey", password="SAS_KEY_VALUE",
                                            allowed_mechs="PLAIN")
        event.container.create_receiver(self.conn, "orders").flow(1)
        self.sender = event.container.create_sender(self.conn, "orders", options=SendVia())
        event.container.declare_transaction(self.conn, handler=self)

    def on_message(self, event):
        self.order = event
        self.work()

    def on_transaction_declared(self, event):
        self.txn = event.transaction
        self.work()

    def work(self):
        if self.order and self.txn:
            self.txn.send(self.sender, Message(body="invoice for " + self.order.message.body))
            self.txn.accept(self.order.delivery)  # complete, in the transaction
            self.txn.commit()  # or self.txn.abort() to roll both back

    def on_transaction_committed(self, event):
        print("committed")
        self.conn.close()

    def on_transaction_commit_failed(self, event):
        print("commit failed:", event.delivery.remote.condition)
        self.conn.close()


Container(Invoicer()).run()
