import os

from azure.servicebus.management import ServiceBusAdministrationClient

# HTTPS to the port in Endpoint; run with REQUESTS_CA_BUNDLE=$(peeklock cert --path).
port = os.environ.get("PEEKLOCK_PORT", "5300")
cs = "Endpoint=sb://localhost:" + port + ";SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE"
with ServiceBusAdministrationClient.from_connection_string(cs) as admin:
    admin.create_queue("invoices")
    print(sorted(q.name for q in admin.list_queues()))
    admin.delete_queue("invoices")
