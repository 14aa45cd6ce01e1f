"""Drives peeklock with Apache Qpid Proton (not rhea): SASL PLAIN login, send, receive under a lock,
abandon (modified), dead-letter (rejected), complete (accepted). Prints one JSON object with what it saw.
Usage: proton_client.py PORT [CA_FILE]; with CA_FILE it connects over TLS (amqps), trusting that CA and checking
the broker's name (localhost)."""
import json
import sys

from proton import Message, SSLDomain
from proton.utils import BlockingConnection

port = sys.argv[1]
ssl_domain = None
if len(sys.argv) > 2:
    ssl_domain = SSLDomain(SSLDomain.MODE_CLIENT)
    ssl_domain.set_trusted_ca_db(sys.argv[2])
    ssl_domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
url = ("amqps://localhost:%s" if ssl_domain else "amqp://127.0.0.1:%s") % port
conn = BlockingConnection(url, user="RootManageSharedAccessKey", password="SAS_KEY_VALUE",
                          allowed_mechs="PLAIN", timeout=30, ssl_domain=ssl_domain)
out = {}
# Sender and receiver with the same address: Proton gives both links the same name.
snd = conn.create_sender("q")
for i, body in enumerate(["one", "two", "three"]):
    snd.send(Message(id="p%d" % (i + 1), body=body, properties={"n": i, "tag": "proton"}))
rcv = conn.create_receiver("q", credit=1)
m1 = rcv.receive(timeout=20)
out["first"] = {"id": m1.id, "body": m1.body, "props": m1.properties,
                "seq": m1.annotations.get("x-opt-sequence-number"), "dc": m1.delivery_count}
rcv.release(delivered=True)  # modified{delivery-failed} -> abandon
# The receiver keeps one credit out, so p2 was already taken (prefetched) before p1 went back.
m2 = rcv.receive(timeout=20)
out["next"] = {"id": m2.id, "dc": m2.delivery_count}
rcv.reject()  # rejected -> dead-letter
# The abandoned p1 comes back (delivery count 1) and p3 follows; with one credit always outstanding the
# receiver may already hold p3 when p1 returns, so only the set and p1's count are fixed.
m3 = rcv.receive(timeout=20)
rest = {m3.id: m3.delivery_count}
rcv.accept()  # accepted -> complete
m4 = rcv.receive(timeout=20)
rest[m4.id] = m4.delivery_count
rcv.accept()
out["rest"] = rest
dlq = conn.create_receiver("q/$DeadLetterQueue", credit=1)
d = dlq.receive(timeout=20)
out["deadLettered"] = {"id": d.id, "body": d.body}
dlq.accept()
conn.close()
print(json.dumps(out))
