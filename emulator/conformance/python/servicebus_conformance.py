"""Runs the emulator conformance scenarios through azure-servicebus for Python (7.x on uAMQP, the Azure
uAMQP C library): a client stack that shares no code with @azure/service-bus or rhea.

Usage: servicebus_conformance.py  (settings in the environment, set by python-client.test.ts)
  SB_CONNECTION_STRING  Endpoint=sb://127.0.0.1;SharedAccessKeyName=...;SharedAccessKey=...
  SB_TLS_PORT           the emulator's AMQPS port
  SB_CA_FILE            the emulator's certificate (the client verifies the server against it)
  SB_TOPIC_PREFIX       per scenario a topic PREFIX-<scenario> with subscriptions 'plain', 'sessions' (requires sessions), 'dlq',
                        'filtered' (SQL filter: color = 'red') and 'scheduled'
  SB_QUEUE_PREFIX       per scenario queues PREFIX-<scenario>-plain, -sessions (requires sessions), -dlq and -scheduled:
                        the same scenarios run again on queues (all but 'rules'), reported as 'queue-<scenario>'
  SB_QUEUE_SEND_KEY     optional: the key of the queue policy 'send-only' (Send) on the queue PREFIX-sas-plain
  The queue PREFIX-duplicates-plain has RequiresDuplicateDetection (scenario 'queue-duplicates').
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
    TransportType,
)
from azure.servicebus._common import _configuration
from azure.servicebus._servicebus_session import ServiceBusSession
from azure.servicebus.exceptions import SessionLockLostError

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
# listed above), so one scenario's messages never show up in another's subscriptions. On queues, each of those
# subscriptions is a queue of its own (SB_QUEUE_PREFIX-<scenario>-<name>), and a scenario sends straight to
# the queue it then reads: the scenarios say which one with sender(c, name) and receiver(c, name).
TOPIC_PREFIX = os.environ["SB_TOPIC_PREFIX"]
QUEUE_PREFIX = os.environ.get("SB_QUEUE_PREFIX", "")
TOPIC = ""
QUEUES = ""  # the scenario's queue prefix when it runs on queues, else ""
WAIT = 5


def sender(c, name):
    """A sender to the topic, or (on queues) to the queue standing in for subscription `name`."""
    if QUEUES:
        return c.get_queue_sender(f"{QUEUES}-{name}")
    return c.get_topic_sender(TOPIC)


def receiver(c, name, **kwargs):
    """A receiver on subscription `name` of the topic, or on the queue standing in for it."""
    if QUEUES:
        return c.get_queue_receiver(f"{QUEUES}-{name}", **kwargs)
    return c.get_subscription_receiver(TOPIC, name, **kwargs)


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
    with sender(c, "plain") as s:
        s.send_messages([ServiceBusMessage(f"{tag}-{i}") for i in range(4)])
    with receiver(c, "plain") as r:
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
    with receiver(c, "plain", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as d:
        dl = receive_n(d, 1)
        check(len(dl) == 1 and body_of(dl[0]) == f"{tag}-3", "dead-lettered message in the DLQ")
        check(dl[0].dead_letter_reason == "Bad", f"reason {dl[0].dead_letter_reason}")
        check(dl[0].dead_letter_error_description == "it is bad", "description")
        d.complete_message(dl[0])
    return "complete, abandon, defer, dead-letter"


def scenario_receive_and_delete(c):
    with sender(c, "dlq") as s:
        s.send_messages(ServiceBusMessage("rad"))
    with receiver(c, "dlq", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        got = receive_n(r, 1)
        check(len(got) == 1 and body_of(got[0]) == "rad", "received in receive-and-delete")
        check(len(r.peek_messages(max_message_count=5)) == 0, "nothing left after receive-and-delete")
    return "receive-and-delete removes"


def scenario_peek(c):
    with sender(c, "dlq") as s:
        s.send_messages([ServiceBusMessage(f"peek-{i}") for i in range(3)])
    with receiver(c, "dlq") as r:
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
    with sender(c, "scheduled") as s:
        at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=6)
        keep, cancel = s.schedule_messages([ServiceBusMessage("later"), ServiceBusMessage("cancelled")], at)
        s.cancel_scheduled_messages(cancel)
    with receiver(c, "scheduled") as r:
        early = r.receive_messages(max_message_count=1, max_wait_time=1)
        check(len(early) == 0, "nothing before the scheduled time")
        got = receive_n(r, 2, timeout=20)
        check([body_of(m) for m in got] == ["later"], f"only the kept message arrives: {[body_of(m) for m in got]}")
        check(got[0].scheduled_enqueue_time_utc is not None, "scheduled enqueue time set")
        r.complete_message(got[0])
    return "schedule, cancel, arrives when due"


def refuse_foreign_session_ops(held_id):
    """Session `held_id` is held by another receiver: from a receiver of another session, on another
    connection, get/set state and renew are refused with SessionLockLostError. The public API sends these only
    for the receiver's own session; the client's own ServiceBusSession class, given the other session's id,
    sends them as it sends its own (naming this receiver's link in associated-link-name)."""
    with client() as other_client, receiver(other_client, "sessions", session_id="elsewhere") as other:
        foreign = ServiceBusSession(held_id, other)
        for what, op in [
            ("get_state", foreign.get_state),
            ("set_state", lambda: foreign.set_state(b"stolen")),
            ("renew_lock", foreign.renew_lock),
        ]:
            try:
                op()
            except SessionLockLostError:
                continue
            except Exception as e:  # pylint: disable=broad-except
                raise AssertionError(f"{what} on a session held elsewhere: expected SessionLockLostError, got {e!r}")
            raise AssertionError(f"{what} on a session held elsewhere succeeded")


def refuse_foreign_deferred_receive(held_id, sequence_number):
    """Session `held_id` is held by another receiver and has a deferred message: from a receiver of another
    session, on another connection, receive-by-sequence-number naming `held_id` is refused with
    SessionLockLostError (and takes nothing). The public API names only the receiver's own session; pointing
    the receiver's session id at the held one makes the client send the request as it sends its own."""
    with client() as other_client, receiver(other_client, "sessions", session_id="elsewhere") as other:
        other._session_id = held_id  # pylint: disable=protected-access
        try:
            other.receive_deferred_messages([sequence_number])
        except SessionLockLostError:
            return
        except Exception as e:  # pylint: disable=broad-except
            raise AssertionError(f"deferred receive from a session held elsewhere: expected SessionLockLostError, got {e!r}")
        raise AssertionError("deferred receive from a session held elsewhere succeeded")


def scenario_sessions(c):
    with sender(c, "sessions") as s:
        s.send_messages([ServiceBusMessage(f"a-{i}", session_id="a") for i in range(3)])
        s.send_messages([ServiceBusMessage(f"b-{i}", session_id="b") for i in range(2)])
    with receiver(c, "sessions", session_id="b") as r:
        got = receive_n(r, 2)
        check([body_of(m) for m in got] == ["b-0", "b-1"], "session b in order")
        check(r.session.session_id == "b", "session id")
        r.session.set_state(b"state-b")
        check(r.session.get_state() == b"state-b", "session state read back")
        before = r.session.locked_until_utc
        time.sleep(0.05)
        r.session.renew_lock()
        check(r.session.locked_until_utc >= before, "session lock renewed")
        refuse_foreign_session_ops("b")
        check(r.session.get_state() == b"state-b", "session state untouched by the refused requests")
        r.session.renew_lock()
        # A deferred session message: refused to another connection, then taken back and settled by its own
        # receiver (receive-by-sequence-number and update-disposition with the session id and its link name).
        r.defer_message(got[1])
        refuse_foreign_deferred_receive("b", got[1].sequence_number)
        deferred = r.receive_deferred_messages([got[1].sequence_number])
        check(len(deferred) == 1 and body_of(deferred[0]) == "b-1", "own deferred session message by sequence number")
        r.complete_message(got[0])
        r.complete_message(deferred[0])
    with receiver(c, "sessions", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=WAIT) as r:
        check(r.session.session_id == "a", f"next available session is a, got {r.session.session_id}")
        got = receive_n(r, 3)
        check([body_of(m) for m in got] == ["a-0", "a-1", "a-2"], "session a in order")
        for m in got:
            r.complete_message(m)
    with receiver(c, "sessions", session_id="b") as r:
        check(r.session.get_state() == b"state-b", "session state kept after the receiver closed")
    return "named and next-available sessions, state, lock renewal"


def scenario_lock_renewal(c):
    with sender(c, "dlq") as s:
        s.send_messages(ServiceBusMessage("renew"))
    with receiver(c, "dlq") as r:
        got = receive_n(r, 1)
        check(len(got) == 1, "received")
        before = got[0].locked_until_utc
        time.sleep(1.1)
        after = r.renew_message_lock(got[0])
        check(after > before, f"lock renewed: {before} -> {after}")
        r.complete_message(got[0])
    return "renew_message_lock extends the lock"


def scenario_rules(c):
    with sender(c, "filtered") as s:
        s.send_messages(
            [
                ServiceBusMessage("red", application_properties={"color": "red"}),
                ServiceBusMessage("blue", application_properties={"color": "blue"}),
            ]
        )
    with receiver(c, "filtered") as r:
        got = receive_n(r, 2, timeout=8)
        check([body_of(m) for m in got] == ["red"], f"only the matching message: {[body_of(m) for m in got]}")
        r.complete_message(got[0])
    return "SQL filter on an application property"


def scenario_property_types(c):
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    props = {"i": 42, "big": 2**40, "f": 1.5, "s": "x", "b": True, "t": when, "bin": b"\x01\x02"}
    with sender(c, "dlq") as s:
        s.send_messages(ServiceBusMessage("typed", application_properties=props))
    with receiver(c, "dlq") as r:
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


def refused(fn):
    """The error class name fn() raised (None if it did not raise)."""
    try:
        fn()
    except Exception as err:  # the class is what the test compares
        return type(err).__name__
    return None


def scenario_queue_sas(c):
    # A queue's own shared access policy (its AuthorizationRules): a Send key sends to that queue and to no
    # other, and cannot receive from it.
    key = os.environ["SB_QUEUE_SEND_KEY"]
    own = f"{QUEUES}-plain"
    endpoint = os.environ["SB_CONNECTION_STRING"].split(";")[0]
    with ServiceBusClient.from_connection_string(
        f"{endpoint};SharedAccessKeyName=send-only;SharedAccessKey={key}",
        connection_verify=os.environ["SB_CA_FILE"],
        retry_total=0,
    ) as limited:
        with limited.get_queue_sender(own) as s:
            s.send_messages(ServiceBusMessage("by-queue-key"))

        def receive_own():
            with limited.get_queue_receiver(own, max_wait_time=1) as r:
                r.receive_messages(max_message_count=1, max_wait_time=1)

        def send_other():
            with limited.get_queue_sender(f"{QUEUES}-dlq") as s:
                s.send_messages(ServiceBusMessage("elsewhere"))

        got = refused(receive_own)
        check(got == "ServiceBusAuthorizationError", f"receive with a Send key: {got}")
        # The key does not sign for another queue at all: its put-token is refused (401), as on Azure.
        got = refused(send_other)
        check(got == "ServiceBusAuthenticationError", f"send to another queue: {got}")
    with receiver(c, "plain") as r:
        got = receive_n(r, 1)
        check([body_of(m) for m in got] == ["by-queue-key"], "the namespace key reads what the queue key sent")
        r.complete_message(got[0])
    return "queue Send policy: sends to its queue only, cannot receive"


def scenario_websocket(c):
    # AMQP over WebSockets (TransportType.AmqpOverWebsocket): uAMQP's own WebSocket client, wss to
    # /$servicebus/websocket/ on the port the test gave (it would be 443 against Azure). There is no fallback
    # to plain AMQPS in that mode: a refused upgrade fails the connection.
    with ServiceBusClient.from_connection_string(
        os.environ["SB_CONNECTION_STRING"],
        connection_verify=os.environ["SB_CA_FILE"],
        transport_type=TransportType.AmqpOverWebsocket,
        retry_total=0,
    ) as ws:
        with ws.get_queue_sender(f"{QUEUES}-plain") as s:
            s.send_messages([ServiceBusMessage(f"ws-{i}") for i in range(3)])
        with ws.get_queue_receiver(f"{QUEUES}-plain") as r:
            got = sorted(receive_n(r, 3), key=lambda m: m.sequence_number)
            check([body_of(m) for m in got] == ["ws-0", "ws-1", "ws-2"], f"received {[body_of(m) for m in got]}")
            r.complete_message(got[0])
            r.dead_letter_message(got[1], reason="ws")
            r.defer_message(got[2])
            deferred = r.receive_deferred_messages([got[2].sequence_number])
            check(len(deferred) == 1, "deferred over websockets")
            r.complete_message(deferred[0])
    return "send, receive, complete, dead-letter, defer over wss"


def scenario_duplicates(c):
    # Duplicate detection on a queue created with RequiresDuplicateDetection: a MessageId sent again (over
    # AMQPS, in a batch, and over WebSockets) is accepted by every send and delivered once.
    tag = uuid.uuid4().hex[:8]
    with sender(c, "plain") as s:
        s.send_messages(ServiceBusMessage("first", message_id=f"{tag}-1"))
        s.send_messages(ServiceBusMessage("retry", message_id=f"{tag}-1"))
        s.send_messages([ServiceBusMessage("b", message_id=f"{tag}-2"), ServiceBusMessage("dup", message_id=f"{tag}-1")])
    with ServiceBusClient.from_connection_string(
        os.environ["SB_CONNECTION_STRING"],
        connection_verify=os.environ["SB_CA_FILE"],
        transport_type=TransportType.AmqpOverWebsocket,
        retry_total=0,
    ) as ws:
        with ws.get_queue_sender(f"{QUEUES}-plain") as s:
            s.send_messages(ServiceBusMessage("over wss", message_id=f"{tag}-2"))
    with receiver(c, "plain") as r:
        got = receive_n(r, 3, timeout=8)
        check(
            sorted(str(m.message_id) for m in got) == [f"{tag}-1", f"{tag}-2"],
            f"each MessageId once: {[(str(m.message_id), body_of(m)) for m in got]}",
        )
        check(body_of(next(m for m in got if str(m.message_id) == f"{tag}-1")) == "first", "the first copy is kept")
        for m in got:
            r.complete_message(m)
    return "repeated MessageIds (AMQPS, batch, WebSockets) accepted and delivered once"


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
    # Every scenario on a topic, then on queues (all but 'rules', which are a subscription's), then the
    # queue policy scenario when the test made that policy.
    runs = [(name, fn, "") for name, fn in SCENARIOS]
    if QUEUE_PREFIX:
        runs += [(f"queue-{name}", fn, f"{QUEUE_PREFIX}-{name}") for name, fn in SCENARIOS if name != "rules"]
        runs.append(("queue-websocket", scenario_websocket, f"{QUEUE_PREFIX}-websocket"))
        runs.append(("queue-duplicates", scenario_duplicates, f"{QUEUE_PREFIX}-duplicates"))
        if os.environ.get("SB_QUEUE_SEND_KEY"):
            runs.append(("queue-sas", scenario_queue_sas, f"{QUEUE_PREFIX}-sas"))
    global TOPIC, QUEUES
    with client() as c:
        for name, fn, queues in runs:
            if only and name not in only:
                continue
            TOPIC = f"{TOPIC_PREFIX}-{name}"
            QUEUES = queues
            try:
                detail = fn(c)
                print(json.dumps({"scenario": name, "ok": True, "detail": detail}), flush=True)
            except Exception as err:  # report every scenario, never stop at the first failure
                tb = traceback.format_exc(limit=3)
                print(json.dumps({"scenario": name, "ok": False, "detail": f"{err!r}\n{tb}"}), flush=True)


if __name__ == "__main__":
    main()
