"""Drives Microsoft's Python administration client (azure-servicebus 7.8.2, Debian's python3-azure), unmodified:
it always dials HTTPS on the port named in Endpoint, and trusts the broker's local CA through REQUESTS_CA_BUNDLE,
which the caller sets. Prints one JSON list: {call, ok, value} or {call, ok: false, error, status}.

Usage: python_admin_client.py <port>
"""

import json
import sys

from azure.core.exceptions import HttpResponseError
from azure.servicebus.management import ServiceBusAdministrationClient, SqlRuleFilter

port = int(sys.argv[1])
CONNECTION_STRING = (
    "Endpoint=sb://localhost:%d;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE" % port
)
calls = []


def call(name, fn):
    try:
        calls.append({"call": name, "ok": True, "value": fn()})
    except HttpResponseError as err:
        calls.append({"call": name, "ok": False, "error": type(err).__name__, "status": err.status_code})


with ServiceBusAdministrationClient.from_connection_string(CONNECTION_STRING) as admin:
    call("create_queue(pq)", lambda: admin.create_queue("pq", max_delivery_count=5).name)
    call("create_queue(pq) again", lambda: admin.create_queue("pq").name)
    call("get_queue(pq)", lambda: [admin.get_queue("pq").name, admin.get_queue("pq").max_delivery_count])
    call("get_queue_runtime_properties(pq)", lambda: admin.get_queue_runtime_properties("pq").active_message_count)
    call("list_queues()", lambda: sorted(q.name for q in admin.list_queues()))
    call("get_queue(missing)", lambda: admin.get_queue("missing").name)

    call("create_topic(pt)", lambda: admin.create_topic("pt").name)
    call("get_topic(pt)", lambda: admin.get_topic("pt").name)
    call("list_topics()", lambda: sorted(t.name for t in admin.list_topics()))

    call("create_subscription(pt, ps)", lambda: admin.create_subscription("pt", "ps").name)
    call("get_subscription(pt, ps)", lambda: admin.get_subscription("pt", "ps").name)
    call("list_subscriptions(pt)", lambda: sorted(s.name for s in admin.list_subscriptions("pt")))

    call("create_rule(pt, ps, red)", lambda: admin.create_rule("pt", "ps", "red", filter=SqlRuleFilter("color = 'red'")).name)
    call("get_rule(pt, ps, red)", lambda: admin.get_rule("pt", "ps", "red").filter.sql_expression)
    call("list_rules(pt, ps)", lambda: sorted(r.name for r in admin.list_rules("pt", "ps")))
    call("delete_rule(pt, ps, red)", lambda: admin.delete_rule("pt", "ps", "red"))
    call("list_rules(pt, ps) after delete", lambda: sorted(r.name for r in admin.list_rules("pt", "ps")))

    call("delete_subscription(pt, ps)", lambda: admin.delete_subscription("pt", "ps"))
    call("list_subscriptions(pt) after delete", lambda: sorted(s.name for s in admin.list_subscriptions("pt")))
    call("delete_topic(pt)", lambda: admin.delete_topic("pt"))
    call("list_topics() after delete", lambda: sorted(t.name for t in admin.list_topics()))
    call("delete_queue(pq)", lambda: admin.delete_queue("pq"))
    call("list_queues() after delete", lambda: sorted(q.name for q in admin.list_queues()))
    call("get_namespace_properties()", lambda: admin.get_namespace_properties().name)

print(json.dumps(calls))
