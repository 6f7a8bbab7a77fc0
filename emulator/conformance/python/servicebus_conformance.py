"""Runs the emulator conformance scenarios through azure-servicebus for Python (7.x on uAMQP, the Azure
uAMQP C library): a client stack that shares no code with @azure/service-bus or rhea.

Usage: servicebus_conformance.py  (settings in the environment, set by python-client.test.ts)
  SB_CONNECTION_STRING  Endpoint=sb://127.0.0.1;SharedAccessKeyName=...;SharedAccessKey=...
  SB_TLS_PORT           the emulator's AMQPS port
  SB_CA_FILE            the emulator's certificate (the client verifies the server against it)
  SB_TOPIC_PREFIX       per scenario a topic PREFIX-<scenario> with subscriptions 'plain', 'sessions' (requires sessions), 'dlq',
                        'filtered' (SQL filter: color = 'red') and 'scheduled'
Prints one JSON line per scenario: {"scenario": name, "ok": bool, "detail": str}.
"""

import datetime
import json
import os
import sys
import time
import traceback
import uuid

from azure.servicebus import (
    NEXT_AVAILABLE_SESSION,
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceiveMode,
    ServiceBusSubQueue,
)
from azure.servicebus._common import _configuration

# azure-servicebus 7.8 always dials AMQPS on 5671 (its Configuration has no port option; UseDevelopmentEmulator
# came in a later version). The test gives the emulator an ephemeral TLS port so parallel runs do not collide,
# so this one attribute is pointed at it. Nothing else in the client is touched.
_TLS_PORT = int(os.environ["SB_TLS_PORT"])
_original_init = _configuration.Configuration.__init__


def _init(self, **kwargs):
    _original_init(self, **kwargs)
    self.connection_port = _TLS_PORT


_configuration.Configuration.__init__ = _init

# Each scenario has its own topic (SB_TOPIC_PREFIX-<scenario>, created by the test with the subscriptions
# listed above), so one scenario's messages never show up in another's subscriptions.
TOPIC_PREFIX = os.environ["SB_TOPIC_PREFIX"]
TOPIC = ""
WAIT = 5


def client():
    return ServiceBusClient.from_connection_string(
        os.environ["SB_CONNECTION_STRING"],
        connection_verify=os.environ["SB_CA_FILE"],
        retry_total=1,
        logging_enable=bool(os.environ.get("SB_DEBUG")),
    )


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def receive_n(receiver, n, timeout=15):
    got = []
    deadline = time.time() + timeout
    while len(got) < n and time.time() < deadline:
        got.extend(receiver.receive_messages(max_message_count=n - len(got), max_wait_time=WAIT))
    return got


def body_of(m):
    return b"".join(m.body).decode() if not isinstance(m.body, (bytes, str)) else (
        m.body.decode() if isinstance(m.body, bytes) else m.body
    )


def scenario_settlement(c):
    tag = uuid.uuid4().hex[:8]
    with c.get_topic_sender(TOPIC) as s:
        s.send_messages([ServiceBusMessage(f"{tag}-{i}") for i in range(4)])
    with c.get_subscription_receiver(TOPIC, "plain") as r:
        msgs = sorted(receive_n(r, 4), key=lambda m: m.sequence_number)
        check(len(msgs) == 4, f"received {len(msgs)} of 4")
        check([body_of(m) for m in msgs] == [f"{tag}-{i}" for i in range(4)], "bodies in order")
        complete, abandon, defer, dead = msgs
        r.complete_message(complete)
        r.abandon_message(abandon)
        deferred_seq = defer.sequence_number
        r.defer_message(defer)
        r.dead_letter_message(dead, reason="Bad", error_description="it is bad")
        again = receive_n(r, 1)
        check(len(again) == 1 and body_of(again[0]) == f"{tag}-1", "abandoned message redelivered")
        check(again[0].delivery_count == 1, f"delivery count after abandon {again[0].delivery_count}")
        r.complete_message(again[0])
        deferred = r.receive_deferred_messages([deferred_seq])
        check(len(deferred) == 1 and body_of(deferred[0]) == f"{tag}-2", "deferred message by sequence number")
        r.complete_message(deferred[0])
    with c.get_subscription_receiver(TOPIC, "plain", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as d:
        dl = receive_n(d, 1)
        check(len(dl) == 1 and body_of(dl[0]) == f"{tag}-3", "dead-lettered message in the DLQ")
        check(dl[0].dead_letter_reason == "Bad", f"reason {dl[0].dead_letter_reason}")
        check(dl[0].dead_letter_error_description == "it is bad", "description")
        d.complete_message(dl[0])
    return "complete, abandon, defer, dead-letter"


def scenario_receive_and_delete(c):
    with c.get_topic_sender(TOPIC) as s:
        s.send_messages(ServiceBusMessage("rad"))
    with c.get_subscription_receiver(
        TOPIC, "dlq", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE
    ) as r:
        got = receive_n(r, 1)
        check(len(got) == 1 and body_of(got[0]) == "rad", "received in receive-and-delete")
        check(len(r.peek_messages(max_message_count=5)) == 0, "nothing left after receive-and-delete")
    return "receive-and-delete removes"


def scenario_peek(c):
    with c.get_topic_sender(TOPIC) as s:
        s.send_messages([ServiceBusMessage(f"peek-{i}") for i in range(3)])
    with c.get_subscription_receiver(TOPIC, "dlq") as r:
        peeked = r.peek_messages(max_message_count=10)
        check([body_of(m) for m in peeked] == ["peek-0", "peek-1", "peek-2"], "peeked in order")
        seqs = [m.sequence_number for m in peeked]
        check(seqs == sorted(seqs), "sequence numbers ascend")
        from_second = r.peek_messages(max_message_count=10, sequence_number=seqs[1])
        check([body_of(m) for m in from_second] == ["peek-1", "peek-2"], "peek from a sequence number")
        got = receive_n(r, 3)
        check(len(got) == 3, "peek did not lock")
        for m in got:
            r.complete_message(m)
    return "peek, from sequence number, no lock"


def scenario_schedule(c):
    with c.get_topic_sender(TOPIC) as s:
        at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=6)
        keep, cancel = s.schedule_messages([ServiceBusMessage("later"), ServiceBusMessage("cancelled")], at)
        s.cancel_scheduled_messages(cancel)
    with c.get_subscription_receiver(TOPIC, "scheduled") as r:
        early = r.receive_messages(max_message_count=1, max_wait_time=1)
        check(len(early) == 0, "nothing before the scheduled time")
        got = receive_n(r, 2, timeout=20)
        check([body_of(m) for m in got] == ["later"], f"only the kept message arrives: {[body_of(m) for m in got]}")
        check(got[0].scheduled_enqueue_time_utc is not None, "scheduled enqueue time set")
        r.complete_message(got[0])
    return "schedule, cancel, arrives when due"


def scenario_sessions(c):
    with c.get_topic_sender(TOPIC) as s:
        s.send_messages([ServiceBusMessage(f"a-{i}", session_id="a") for i in range(3)])
        s.send_messages([ServiceBusMessage(f"b-{i}", session_id="b") for i in range(2)])
    with c.get_subscription_receiver(TOPIC, "sessions", session_id="b") as r:
        got = receive_n(r, 2)
        check([body_of(m) for m in got] == ["b-0", "b-1"], "session b in order")
        check(r.session.session_id == "b", "session id")
        r.session.set_state(b"state-b")
        check(r.session.get_state() == b"state-b", "session state read back")
        before = r.session.locked_until_utc
        time.sleep(0.05)
        r.session.renew_lock()
        check(r.session.locked_until_utc >= before, "session lock renewed")
        for m in got:
            r.complete_message(m)
    with c.get_subscription_receiver(TOPIC, "sessions", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=WAIT) as r:
        check(r.session.session_id == "a", f"next available session is a, got {r.session.session_id}")
        got = receive_n(r, 3)
        check([body_of(m) for m in got] == ["a-0", "a-1", "a-2"], "session a in order")
        for m in got:
            r.complete_message(m)
    with c.get_subscription_receiver(TOPIC, "sessions", session_id="b") as r:
        check(r.session.get_state() == b"state-b", "session state kept after the receiver closed")
    return "named and next-available sessions, state, lock renewal"


def scenario_lock_renewal(c):
    with c.get_topic_sender(TOPIC) as s:
        s.send_messages(ServiceBusMessage("renew"))
    with c.get_subscription_receiver(TOPIC, "dlq") as r:
        got = receive_n(r, 1)
        check(len(got) == 1, "received")
        before = got[0].locked_until_utc
        time.sleep(1.1)
        after = r.renew_message_lock(got[0])
        check(after > before, f"lock renewed: {before} -> {after}")
        r.complete_message(got[0])
    return "renew_message_lock extends the lock"


def scenario_rules(c):
    with c.get_topic_sender(TOPIC) as s:
        s.send_messages(
            [
                ServiceBusMessage("red", application_properties={"color": "red"}),
                ServiceBusMessage("blue", application_properties={"color": "blue"}),
            ]
        )
    with c.get_subscription_receiver(TOPIC, "filtered") as r:
        got = receive_n(r, 2, timeout=8)
        check([body_of(m) for m in got] == ["red"], f"only the matching message: {[body_of(m) for m in got]}")
        r.complete_message(got[0])
    return "SQL filter on an application property"


def scenario_property_types(c):
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    props = {"i": 42, "big": 2**40, "f": 1.5, "s": "x", "b": True, "t": when, "bin": b"\x01\x02"}
    with c.get_topic_sender(TOPIC) as s:
        s.send_messages(ServiceBusMessage("typed", application_properties=props))
    with c.get_subscription_receiver(TOPIC, "dlq") as r:
        got = receive_n(r, 1)
        check(len(got) == 1, "received")
        back = {k.decode() if isinstance(k, bytes) else k: v for k, v in got[0].application_properties.items()}
        r.complete_message(got[0])
    for k, v in props.items():
        b = back.get(k)
        if isinstance(b, bytes) and isinstance(v, str):
            b = b.decode()
        if isinstance(v, datetime.datetime):
            # uAMQP hands timestamps back as epoch milliseconds (an int), as it does against Azure.
            check(isinstance(b, int) and b == int(v.timestamp() * 1000), f"{k}: {b!r}")
            continue
        check(type(b) is type(v) and b == v, f"{k}: sent {v!r}, got {b!r}")
    return "int, long, float, str, bool, timestamp, binary round-trip"


SCENARIOS = [
    ("settlement", scenario_settlement),
    ("receive-and-delete", scenario_receive_and_delete),
    ("peek", scenario_peek),
    ("schedule", scenario_schedule),
    ("sessions", scenario_sessions),
    ("lock-renewal", scenario_lock_renewal),
    ("rules", scenario_rules),
    ("property-types", scenario_property_types),
]


def main():
    if os.environ.get("SB_DEBUG"):
        import logging

        logging.basicConfig(level=logging.INFO)
    only = set(sys.argv[1:])
    with client() as c:
        for name, fn in SCENARIOS:
            if only and name not in only:
                continue
            global TOPIC
            TOPIC = f"{TOPIC_PREFIX}-{name}"
            try:
                detail = fn(c)
                print(json.dumps({"scenario": name, "ok": True, "detail": detail}), flush=True)
            except Exception as err:  # report every scenario, never stop at the first failure
                tb = traceback.format_exc(limit=3)
                print(json.dumps({"scenario": name, "ok": False, "detail": f"{err!r}\n{tb}"}), flush=True)


if __name__ == "__main__":
    main()
