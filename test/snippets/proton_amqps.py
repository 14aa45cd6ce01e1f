import os

from proton import Message, SSLDomain
from proton.utils import BlockingConnection

# Qpid Proton over amqps with SASL PLAIN: user = policy name, password = key.
port = os.environ.get("PEEKLOCK_PORT", "5671")
ssl = SSLDomain(SSLDomain.MODE_CLIENT)
ssl.set_trusted_ca_db(os.environ.get("PEEKLOCK_CA", "data/tls/ca.crt"))
ssl.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
conn = BlockingConnection("amqps://localhost:" + port, user="RootManageSharedAccessKey", password="SAS_KEY_VALUE",
                          allowed_mechs="PLAIN", ssl_domain=ssl, timeout=30)
conn.create_sender("orders").send(Message(body="hello from proton"))
receiver = conn.create_receiver("orders", credit=1)
print(receiver.receive(timeout=10).body)
receiver.accept()  # complete
conn.close()
