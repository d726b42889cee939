"""The request shape of agent clients: a 4 KB system prompt, 12 tools, three dependent steps.

A one-tool probe can pass where an agent fails: under a long system prompt and a
dozen declared tools some servers stop making native calls (the calls come back
as JSON text in the content, NVIDIA/NemoClaw#7967) or the model loses the chain.
`AGENTIC_TASK` needs three steps in order, each taking its argument from the
result before it: `find_customer(email)` -> a customer id, `list_orders(customer_id)`
-> an order id, `get_shipment(order_id)` -> the tracking number the answer must
name (`AGENTIC_ANSWER`). The other nine tools are what an agent client declares
beside them. Every tool is deterministic; a wrong argument is a tool error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .tool import Tool

__all__ = [
    "AGENTIC_ANSWER",
    "AGENTIC_STEPS",
    "AGENTIC_SYSTEM",
    "AGENTIC_TASK",
    "agentic_tools",
]

EMAIL = "dana.reyes@example.com"
CUSTOMER_ID = "CUS-20931"
ORDER_ID = "ORD-77412"
AGENTIC_ANSWER = "TRK-58213-LX"
# The dependent steps, in order: (tool, argument name, the value it must be given).
AGENTIC_STEPS = (
    ("find_customer", "email", EMAIL),
    ("list_orders", "customer_id", CUSTOMER_ID),
    ("get_shipment", "order_id", ORDER_ID),
)
AGENTIC_TASK = (
    f"The customer {EMAIL} asks where her most recent order is. Look her up, find her "
    "latest order, then its shipment, and tell me the carrier and the tracking number."
)

_RULES = [
    "You are Relay, the operations agent of Northwind Outfitters, an online retailer of "
    "outdoor clothing and equipment. You work inside the support console: the people who "
    "write to you are support staff, not customers, and they expect short, exact answers.",
    "Tools. You have tools for the customer database, orders, shipments, invoices, the "
    "product catalogue, store hours, currency conversion, tickets and email. Use a tool "
    "whenever the answer depends on live data; never guess an id, an amount, a date or a "
    "status. When one tool's result gives the input of the next, call them one after the "
    "other: wait for each result before you decide on the next call. Call each tool with "
    "exactly the arguments its schema declares; ids are case-sensitive and keep their "
    "prefixes (CUS-, ORD-, INV-, TRK-).",
    "Privacy. Customer records hold personal data. Quote only what the question needs: a "
    "name, an order id, a shipment status, a tracking number. Never paste a full record, "
    "an address or a payment method into an answer, a ticket or an email unless the staff "
    "member asks for that field by name.",
    "Actions with side effects. Refunds, address changes, tickets and emails change "
    "things outside this conversation. Take them only when the staff member asks for that "
    "action in this conversation; a question about an order is not a request to refund it. "
    "Before a refund, confirm the order id and the reason in your answer.",
    "Errors. A tool result that starts with 'error:' means the call failed: read the "
    "message, fix the argument if it names the problem, and try once more; if it fails "
    "again, say which step failed and why. Do not invent the missing data.",
    "Answers. Answer in plain sentences, at most three, in the staff member's language. "
    "Name ids exactly as the tools return them. When you report a shipment, give the "
    "carrier, the tracking number and the status. Do not describe the tools you used "
    "unless asked; do not apologise; do not add offers of further help.",
    "Formatting. No markdown headings, no tables, no bullet lists in answers. Dates as "
    "YYYY-MM-DD, amounts with their currency code (EUR 49.90), times in 24-hour form with "
    "the store's time zone.",
    "Scope. You answer about Northwind's customers, orders, shipments, invoices, products "
    "and stores. For anything else, say it is outside what you can look up.",
    "Escalation. If the staff member reports a safety issue with a product, a data "
    "breach, or a legal threat, create a ticket with priority 'urgent' and say that you "
    "did; do not try to resolve it yourself.",
    "Store network. Northwind runs flagship stores in Lisbon (LIS-01), Porto (OPO-02), "
    "Madrid (MAD-03), Barcelona (BCN-04), Lyon (LYS-05) and Munich (MUC-06), and ships "
    "from warehouses in Zaragoza and Leipzig. Orders placed before 14:00 CET on a working "
    "day leave the warehouse the same day; carriers are DHL, GLS, CTT and Chronopost, "
    "chosen by destination. Tracking numbers carry the TRK- prefix in our systems even "
    "where the carrier's own number differs; quote ours.",
    "Returns policy, for reference when staff ask: 30 days from delivery for unworn items "
    "with tags, 14 days for opened technical equipment, no returns on personalised "
    "products; refunds go back to the original payment method within 5 working days of "
    "the warehouse receiving the item. Exchanges are handled as a return plus a new order.",
    "Loyalty programme, for reference: Trail members (free) get free shipping over EUR 60; "
    "Summit members (EUR 29 a year) get free shipping on every order, 10% off full-price "
    "items, and priority handling in the warehouse. Membership shows in the customer "
    "record as tier 'trail' or 'summit'.",
    "Working style. Read the whole request before the first call. Plan the calls the "
    "answer needs and make no others: each extra call costs the staff member time and may "
    "touch data the question did not concern. When a request is ambiguous (two customers "
    "with the same name, an order id with a typo), say what you found and ask one question "
    "instead of choosing for them.",
    "Current date: 2026-12-01. Peak season: carriers may take one extra working day; say "
    "so when a shipment is late by one day or less.",
]
AGENTIC_SYSTEM = "\n\n".join(_RULES)


def _arg(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    return value.strip()


def _find_customer(args: dict[str, Any]) -> str:
    email = _arg(args, "email").lower()
    if email != EMAIL:
        raise ValueError(f"no customer with email {email}")
    return f"customer_id: {CUSTOMER_ID}; name: Dana Reyes; tier: summit; orders: 4"


def _list_orders(args: dict[str, Any]) -> str:
    customer = _arg(args, "customer_id")
    if customer != CUSTOMER_ID:
        raise ValueError(f"no customer {customer}")
    return (
        f"latest first: {ORDER_ID} (placed 2026-11-28, EUR 184.50, shipped); "
        "ORD-70211 (placed 2026-09-02, delivered); ORD-65008 (placed 2026-05-17, delivered)"
    )


def _get_shipment(args: dict[str, Any]) -> str:
    order = _arg(args, "order_id")
    if order != ORDER_ID:
        raise ValueError(f"no shipment for order {order}")
    return f"carrier: DHL; tracking: {AGENTIC_ANSWER}; status: in transit, due 2026-12-03"


def _refuse(what: str) -> Callable[[dict[str, Any]], str]:
    def run(args: dict[str, Any]) -> str:
        raise ValueError(f"{what} is not needed for this task")

    return run


def _string(name: str, description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _schema(*params: tuple[str, str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: _string(name, text) for name, text in params},
        "required": [name for name, _ in params],
    }


def agentic_tools() -> tuple[Tool, ...]:
    """The 12 tools, the three of the task among them (2nd, 5th and 9th, as a client lists)."""
    spec = [
        (
            "get_store_hours",
            "Opening hours of a store by its id (LIS-01, OPO-02, ...).",
            [("store_id", "the store id")],
            _refuse("store hours"),
        ),
        (
            "find_customer",
            "Look a customer up by email; returns the customer id and summary.",
            [("email", "the customer's email address")],
            _find_customer,
        ),
        (
            "list_products",
            "Products of a catalogue category, with prices.",
            [("category", "a category such as jackets or tents")],
            _refuse("the catalogue"),
        ),
        (
            "get_invoice",
            "An invoice by its id (INV-...).",
            [("invoice_id", "the invoice id")],
            _refuse("an invoice"),
        ),
        (
            "list_orders",
            "A customer's orders, latest first, by customer id (CUS-...).",
            [("customer_id", "the customer id")],
            _list_orders,
        ),
        (
            "update_address",
            "Change a customer's delivery address.",
            [("customer_id", "the customer id"), ("address", "the new address")],
            _refuse("an address change"),
        ),
        (
            "refund_order",
            "Refund an order in full.",
            [("order_id", "the order id"), ("reason", "why")],
            _refuse("a refund"),
        ),
        (
            "convert_currency",
            "Convert an amount between currencies.",
            [("amount", "the amount"), ("to", "the currency code")],
            _refuse("a conversion"),
        ),
        (
            "get_shipment",
            "The shipment of an order (ORD-...): carrier, tracking, status.",
            [("order_id", "the order id")],
            _get_shipment,
        ),
        (
            "create_ticket",
            "Open a support ticket.",
            [("subject", "the subject"), ("priority", "low, normal or urgent")],
            _refuse("a ticket"),
        ),
        (
            "send_email",
            "Email a customer.",
            [("to", "the address"), ("body", "the text")],
            _refuse("an email"),
        ),
        (
            "get_weather",
            "Current weather for a city.",
            [("city", "the city")],
            _refuse("the weather"),
        ),
    ]
    return tuple(
        Tool(name, description, _schema(*params), run) for name, description, params, run in spec
    )
