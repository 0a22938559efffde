"""Schemathesis hooks for the gateway's document (loaded through SCHEMATHESIS_HOOKS by schemathesis.int.test.ts).

Each hook stands for a rule that the document states but JSON Schema cannot express; none widens or narrows what
the document allows beyond that rule.
"""

import json
import os
import uuid
from datetime import datetime, timedelta, timezone

import schemathesis
from hypothesis import strategies as st

# `format: phone`: 11 digits that are a number of the ITU-T numbering plan. The test draws them with the same
# library the gateway checks with (libphonenumber) and hands them over in a file.
with open(os.environ["MDS_VALID_PHONES"], encoding="utf-8") as phones:
    schemathesis.openapi.format("phone", st.sampled_from(json.load(phones)))


@schemathesis.hook
def before_call(ctx, case, kwargs):
    # An Idempotency-Key stands for one request: the document says that the same key with another body is
    # refused (422). Drawn and example keys repeat across requests, so each valid one (1 to 255 visible ASCII
    # characters) is made unique, keeping its shape; an invalid one is sent as drawn.
    headers = case.headers or {}
    key = headers.get("Idempotency-Key")
    if isinstance(key, str) and 0 < len(key) <= 200 and all(0x21 <= ord(c) <= 0x7E for c in key):
        headers["Idempotency-Key"] = f"{key}-{uuid.uuid4().hex}"


def _utf16_length(text):
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# The text limits count UTF-16 code units, as the messengers do; JSON Schema's maxLength counts code points. A
# string within maxLength whose UTF-16 length is over it (astral characters such as most emoji count two) is a
# case the schema cannot tell apart: such bodies are not sent. Strings over maxLength are still sent.
_LIMITS = {"telegram": 4096, "max": 4000}
_BUTTON_TEXT = 64


def _in_the_gap(text, limit):
    return len(text) <= limit < _utf16_length(text)


# What JavaScript's String.prototype.trim removes (WhiteSpace and LineTerminator): Python's str.strip() differs.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def _js_trim(text):
    return text.strip(_JS_SPACE)


# send_at's rules that depend on the clock: at most 30 days ahead, and after the end of a ttl_seconds counted from
# acceptance (send_at_out_of_range, send_at_after_expiry). A body within the schema that breaks one is such a case.
_SEND_AT_AHEAD = timedelta(days=30)


def _send_at_refused(body):
    send_at = body.get("send_at") if isinstance(body, dict) else None
    if not isinstance(send_at, str):
        return False
    try:
        at = datetime.fromisoformat(send_at.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    if at.tzinfo is None:
        return False
    # A minute of slack either way: the request reaches the gateway a moment after it is drawn.
    now = datetime.now(timezone.utc)
    if at > now + _SEND_AT_AHEAD - timedelta(minutes=1):
        return True
    ttl = body.get("ttl_seconds")
    return isinstance(ttl, int) and not isinstance(ttl, bool) and at >= now + timedelta(seconds=ttl - 60)


# fallback's rules that compare its channels with the rest of the body: no channel twice (send's own included; no
# bot_name is the default bot: fallback_duplicate_channel), and a text that fits every channel's messenger
# (text_too_long). A body within the schema that breaks one is such a case.
def _fallback_refused(body):
    fallback = body.get("fallback") if isinstance(body, dict) else None
    if not isinstance(fallback, list):
        return False
    channels = [body] + [c for c in fallback if isinstance(c, dict)]
    keys = [(c.get("service"), c.get("bot_name")) for c in channels]
    if len(set(map(repr, keys))) < len(keys):
        return True
    text = body.get("text")
    limits = [_LIMITS[c.get("service")] for c in channels if c.get("service") in _LIMITS]
    return isinstance(text, str) and bool(limits) and _utf16_length(text) > min(limits)


@schemathesis.hook
def filter_body(ctx, body):
    if not isinstance(body, dict):
        return True
    if _send_at_refused(body) or _fallback_refused(body):
        return False
    text, service = body.get("text"), body.get("service")
    if isinstance(text, str) and service in _LIMITS and _in_the_gap(text, _LIMITS[service]):
        return False
    buttons = body.get("buttons")
    if isinstance(buttons, list):
        for button in buttons:
            label = button.get("text") if isinstance(button, dict) else None
            if not isinstance(label, str):
                continue
            if len(label) <= _BUTTON_TEXT < _utf16_length(_js_trim(label)):
                return False
    return True


def _padded_labels(body):
    """Button labels over maxLength only by the spaces around them: within the rule, which counts them trimmed."""
    buttons = body.get("buttons") if isinstance(body, dict) else None
    if not isinstance(buttons, list):
        return []
    labels = [b.get("text") for b in buttons if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return [label for label in labels if len(label) > _BUTTON_TEXT >= _utf16_length(_js_trim(label))]


@schemathesis.hook
def filter_failure(ctx, failure, case, response):
    if failure.code == "ST201" and _batch_item_rejected(case, response):
        return False
    # "Schema-violating request accepted" for a body whose labels exceed maxLength only by their surrounding
    # spaces: the document says the label counts once trimmed, which maxLength cannot say. (The coverage phase
    # draws such labels without passing filter_body.)
    if failure.code == "ST201" and response.status_code == 202 and _padded_labels(case.body):
        return False
    # The coverage phase draws send_at and fallback without passing filter_body either.
    return not (
        failure.code == "ST202"
        and response.status_code == 422
        and (_send_at_refused(case.body) or _fallback_refused(case.body))
    )


def _batch_item_rejected(case, response):
    """A batch whose invalid message was refused on its own, within the 202: the document says each message is
    accepted or rejected by itself (`results`), which a request schema cannot say. The batch as a whole, when it
    breaks its own rules (not `{"messages": [...]}` of 1 to 500), is still refused (422) and checked as any."""
    if case.path != "/api/v1/send/batch" or response.status_code != 202:
        return False
    try:
        results = response.json().get("results", [])
    except ValueError:
        return False
    return any(isinstance(r, dict) and r.get("status") == "rejected" for r in results)
