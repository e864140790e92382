"""Demo data for `manage.py seed_demo`: one regulated enterprise ("Demo
Bank"), its staff, three agents with personas and tools, their users'
memory, session logs and pending proposals of every source.

Everything is written through memoryhub.services (as SYSTEM where an admin
would act), exactly as the
API and the review console would write it, so the demo also exercises the
scanner, the limits, the history and the audit trail.

Seeding is idempotent object by object rather than behind one "already
seeded" flag: each step first looks for what it would create, so a second
run changes nothing and a run that was interrupted is completed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from memoryhub import demo_history, errors, immutability, services
from memoryhub.actors import Actor
from memoryhub.models import (
    AGENT_SCOPED,
    Agent,
    AgentSession,
    Backend,
    FileKind,
    LogEntry,
    Membership,
    Proposal,
    Role,
    Source,
    Strategy,
    ToolSetting,
    Workspace,
    WritePolicy,
)

WORKSPACE_SLUG = "demo"
WORKSPACE_NAME = "Demo Bank"


# --- the data -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DemoStaff:
    username: str
    password: str
    role: str
    email: str
    superuser: bool = False


STAFF: tuple[DemoStaff, ...] = (
    DemoStaff("admin", "demo-admin-pass", Role.ADMIN, "admin@demo-bank.example", superuser=True),
    # A second admin: erasure and weakening policies take two (four-eyes).
    DemoStaff("admin2", "demo-admin2-pass", Role.ADMIN, "admin2@demo-bank.example"),
    DemoStaff("reviewer", "demo-reviewer-pass", Role.REVIEWER, "reviewer@demo-bank.example"),
    DemoStaff("reviewer2", "demo-reviewer2-pass", Role.REVIEWER, "reviewer2@demo-bank.example"),
    DemoStaff("auditor", "demo-auditor-pass", Role.AUDITOR, "auditor@demo-bank.example"),
)
ADMIN_USERNAME = "admin"
REVIEWER_USERNAME = "reviewer"


@dataclass(frozen=True)
class DemoTool:
    name: str
    description: str
    parameters: dict[str, object]


@dataclass(frozen=True)
class DemoSession:
    """One conversation. `external_id` is how a re-run recognises it."""

    external_id: str
    entries: tuple[tuple[str, str], ...]
    ended: bool = True


@dataclass(frozen=True)
class DemoUser:
    user_ref: str
    # Successive versions of each file, oldest first: the demo history.
    user_md: tuple[str, ...]
    memory_md: tuple[str, ...]
    sessions: tuple[DemoSession, ...] = ()


@dataclass(frozen=True)
class DemoAgent:
    slug: str
    name: str
    description: str
    strategy: str
    write_policy: str
    backend: str
    soul: str
    about: str
    tools_md: str
    tools: tuple[DemoTool, ...]
    users: tuple[DemoUser, ...]


def _schema(properties: dict[str, object], required: list[str]) -> dict[str, object]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_CUSTOMER_REF = {"type": "string", "pattern": "^cust-[0-9]{4,8}$", "description": "The bank's customer reference."}


# --- support-bot: retail customer support, hybrid_v2, direct writes -------------------------------

SUPPORT_SOUL = """\
# Aria — Demo Bank customer support

- You are Aria, the chat assistant of Demo Bank's retail banking team.
- Warm, calm and brief: short paragraphs, plain English, no jargon and no emojis.
- Confirm that the customer has passed the in-app identity check before discussing any account detail.
- Never ask for a full card number, a PIN or a one-time code: the bank never needs them in chat.
- When you are unsure, say so and offer a callback from a human colleague.
- Treat signs of financial difficulty or vulnerability with care and mention the support options.
"""

SUPPORT_SOUL_TWEAK = SUPPORT_SOUL.replace(
    "- Treat signs of financial difficulty or vulnerability with care and mention the support options.\n",
    "- Treat signs of financial difficulty or vulnerability with care: offer the Financial Support team "
    "(0800 015 0123, weekdays 08:00–20:00) before anything else, and never push a product.\n",
)

SUPPORT_ABOUT = """\
# What Aria handles

- Cards: lost or stolen cards, declined payments, travel notices, replacement cards.
- Payments: duplicate or unrecognised charges (opens a card dispute), standing orders, transfer status.
- Accounts: balances and recent transactions for the verified customer only.
- Callbacks: books a call or secure message with the contact centre.

Out of scope — hand over to a human colleague:
- Investment, tax, pension or mortgage advice (regulated advice).
- Complaints: log the complaint summary and book a callback within 24 hours.
- Fraud in progress: tell the customer to call the 24/7 fraud line on the back of their card.
"""

SUPPORT_TOOLS_MD = """\
# Tool notes

- lookup_account_summary: only after the identity check; never read out full account numbers, the last four digits \
are enough.
- list_recent_transactions: default to 30 days; ask before going further back.
- open_card_dispute: needs the transaction id from list_recent_transactions. Disputes over 500 EUR go to a human \
agent via schedule_callback instead.
- schedule_callback: use the channel the customer prefers (see USER.md); the contact centre works weekdays \
08:00–20:00 CET.
"""

SUPPORT_TOOLS = (
    DemoTool(
        "lookup_account_summary",
        "Balance, available credit and status of one of the verified customer's accounts.",
        _schema(
            {
                "customer_ref": _CUSTOMER_REF,
                "account_type": {"type": "string", "enum": ["current", "savings", "credit_card"]},
            },
            ["customer_ref", "account_type"],
        ),
    ),
    DemoTool(
        "list_recent_transactions",
        "Card and account transactions of the verified customer, newest first.",
        _schema(
            {
                "customer_ref": _CUSTOMER_REF,
                "account_type": {"type": "string", "enum": ["current", "savings", "credit_card"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 90, "default": 30},
                "merchant_contains": {"type": "string", "maxLength": 80},
            },
            ["customer_ref", "account_type"],
        ),
    ),
    DemoTool(
        "open_card_dispute",
        "Open a chargeback dispute for one card transaction; returns the dispute reference (DSP-…).",
        _schema(
            {
                "customer_ref": _CUSTOMER_REF,
                "transaction_id": {"type": "string", "pattern": "^TX[0-9]{10}$"},
                "reason": {
                    "type": "string",
                    "enum": ["duplicate", "not_recognised", "goods_not_received", "wrong_amount", "cancelled_service"],
                },
                "note": {"type": "string", "maxLength": 500},
            },
            ["customer_ref", "transaction_id", "reason"],
        ),
    ),
    DemoTool(
        "schedule_callback",
        "Book a call, email or secure message from the contact centre.",
        _schema(
            {
                "customer_ref": _CUSTOMER_REF,
                "channel": {"type": "string", "enum": ["phone", "email", "secure_message"]},
                "earliest": {"type": "string", "format": "date-time"},
                "topic": {"type": "string", "maxLength": 200},
            },
            ["customer_ref", "channel", "topic"],
        ),
    ),
)

# The pair with the full story: six ended sessions, a two-version memory and
# a pending consolidation proposal that cites these log lines as evidence.
CUST_1042_MEMORY_V1 = """\
# Long-term memory — cust-1042

- 2026-09-03: reported a lost credit card; replacement issued, received 2026-09-10.
- Prefers phone callbacks in the morning, before 11:00 Lisbon time.
- Travelling in Portugal until 2026-11-15: card payments there are expected.
"""

CUST_1042_MEMORY_V2 = (
    CUST_1042_MEMORY_V1
    + """\
- 2026-10-21: duplicate charge of 42.90 EUR at Livraria Online; dispute DSP-20931 opened.
- Wants a reminder about the credit card statement each month, until 2026-12-01.
"""
)

CUST_1042_CONSOLIDATED = """\
# Long-term memory — cust-1042

- 2026-09-03: reported a lost credit card; replacement issued, received 2026-09-10.
- Preferred contact: email, not phone (since 2026-10-28).
- Written summaries in Portuguese.
- 2026-10-21: duplicate charge of 42.90 EUR at Livraria Online; dispute DSP-20931 resolved, refund received \
2026-11-12.
- Travelling in Spain from 2026-12-10 until 2027-01-05: card payments there are expected.
- Wants a short reminder three days before the credit card statement is due, until 2027-06-30.
"""

CUST_1042_SESSIONS = (
    DemoSession(
        "demo-support-1042-01",
        (
            ("user", "Hi, the same 42.90 charge from Livraria Online shows up twice on my credit card."),
            ("assistant", "I'm sorry about that. Let me look at your recent credit card transactions."),
            ("tool", "list_recent_transactions → 2 matches: TX2026102101 and TX2026102102, 42.90 EUR, 2026-10-20"),
            (
                "assistant",
                "I can see two identical charges on 20 October. I've opened dispute DSP-20931 for the "
                "second one; you'll hear from us within 10 working days.",
            ),
            ("note", "Opened dispute DSP-20931 (duplicate, 42.90 EUR, Livraria Online)."),
            ("user", "Thanks. And please remind me about my credit card statement every month."),
            ("assistant", "Noted: I'll remind you about your statement each month until the end of the year."),
            ("note", "Statement reminder requested, monthly, until 2026-12-01."),
        ),
    ),
    DemoSession(
        "demo-support-1042-02",
        (
            ("user", "From now on please contact me by email rather than phone, my working hours changed."),
            ("assistant", "Understood. I'll use email for callbacks and follow-ups from now on."),
            ("note", "Directive: preferred contact channel changed from phone to email (2026-10-28)."),
            ("user", "Is there any news on the dispute?"),
            ("assistant", "Dispute DSP-20931 is with the merchant's bank; no decision yet."),
        ),
    ),
    DemoSession(
        "demo-support-1042-03",
        (
            (
                "user",
                "I'm back from Lisbon now. Please remember that I'll be in Madrid from 10 December until "
                "5 January, so don't block my card there.",
            ),
            (
                "assistant",
                "Welcome back! I've noted your trip to Spain from 10 December 2026 to 5 January 2027; "
                "card payments there won't be treated as unusual.",
            ),
            ("note", "Travel notice: Spain, 2026-12-10 until 2027-01-05. Portugal trip over."),
        ),
    ),
    DemoSession(
        "demo-support-1042-04",
        (
            (
                "user",
                "About the statement reminders: I prefer one short message three days before the due date, "
                "not a long one. And keep them going next year too.",
            ),
            (
                "assistant",
                "Got it: a short reminder three days before each due date, through June 2027 unless "
                "you tell me otherwise.",
            ),
            ("note", "Directive: statement reminder 3 days before due date, short, until 2027-06-30."),
        ),
    ),
    DemoSession(
        "demo-support-1042-05",
        (
            ("user", "Did the bookshop refund me?"),
            ("tool", "dispute_status DSP-20931 → resolved: merchant refund 42.90 EUR credited 2026-11-12"),
            ("assistant", "Yes: the merchant refunded 42.90 EUR on 12 November and dispute DSP-20931 is closed."),
            ("note", "Dispute DSP-20931 resolved: refund received 2026-11-12."),
        ),
    ),
    DemoSession(
        "demo-support-1042-06",
        (
            ("user", "I prefer written summaries in Portuguese from now on, if that's possible."),
            ("assistant", "Claro! I'll send written summaries in Portuguese; the chat itself can stay in English."),
            ("note", "Directive: written summaries in Portuguese."),
        ),
    ),
)

SUPPORT_USERS = (
    DemoUser(
        "cust-1042",
        user_md=(
            """\
# Customer cust-1042

- Name: Maria; prefers to be addressed by her first name.
- Chats in English; Portuguese is her first language.
- Premium current account and a credit card; customer since 2019.
- Accessibility: likes a written summary after every phone call.
""",
        ),
        memory_md=(CUST_1042_MEMORY_V1, CUST_1042_MEMORY_V2),
        sessions=CUST_1042_SESSIONS,
    ),
    DemoUser(
        "cust-2318",
        user_md=(
            """\
# Customer cust-2318

- Name: Tom Becker; runs a small bakery, has a business current account and a personal account.
- Prefers secure messages in the app; does not want marketing calls.
- Usually chats early in the morning, before the bakery opens.
""",
        ),
        memory_md=(
            """\
# Long-term memory — cust-2318

- Standing order of 1,250 EUR rent to Hausverwaltung Nord on the 1st of each month.
- Card limit on the business account raised to 5,000 EUR until 2026-12-31 for the Christmas season.
- Asked to keep personal and business questions in separate conversations.
""",
        ),
        sessions=(
            DemoSession(
                "demo-support-2318-01",
                (
                    ("user", "Can you check whether the rent standing order will go out on Monday?"),
                    ("tool", "lookup_account_summary current → balance 3,412.18 EUR, status active"),
                    (
                        "assistant",
                        "Yes, the 1,250 EUR standing order is scheduled for Monday 1 December and "
                        "your balance covers it.",
                    ),
                    ("note", "Checked standing order for 2026-12-01; funds sufficient."),
                ),
            ),
            DemoSession(
                "demo-support-2318-02",
                (
                    ("user", "Remember that I want the higher card limit only until New Year, then back to normal."),
                    ("assistant", "Noted: the 5,000 EUR limit returns to the usual limit after 31 December."),
                ),
                ended=False,
            ),
        ),
    ),
    DemoUser(
        "cust-7781",
        user_md=(
            """\
# Customer cust-7781

- Name: Mr. Okafor; prefers formal address.
- Student account, moving to a graduate account in 2027.
- Prefers phone calls after 17:00.
""",
        ),
        memory_md=(
            """\
# Long-term memory — cust-7781

- Card declined twice abroad in August 2026 — travel notice now set for future trips.
- Asked about the graduate account overdraft; callback booked with a colleague on 2026-11-20.
""",
        ),
        sessions=(
            DemoSession(
                "demo-support-7781-01",
                (
                    ("user", "Hello, what overdraft would I get on the graduate account?"),
                    (
                        "assistant",
                        "That depends on an eligibility check, so I've booked a call with a colleague "
                        "for Friday after 17:00, as you prefer.",
                    ),
                    ("tool", "schedule_callback phone 2026-11-20T17:30:00+01:00 → booked CB-88412"),
                    ("note", "Callback CB-88412 booked: graduate account overdraft."),
                ),
            ),
        ),
    ),
)


# --- kyc-analyst: corporate onboarding due diligence, hybrid_v1, review-gated writes ---------------

KYC_SOUL = """\
# KYC Review Analyst

- You support Demo Bank's onboarding compliance officers with corporate customer due diligence (CDD/EDD).
- You prepare findings; the officer decides. Never approve, reject or risk-rate a customer on your own.
- Every finding names its source (registry extract, screening list, document) and the date it was checked.
- Be precise and neutral: facts, not impressions. Flag uncertainty explicitly.
- Personal data is used only for the case at hand, under the bank's AML policy.
"""

KYC_ABOUT = """\
# Scope

- Corporate and partnership onboarding for the EU desk, plus periodic reviews of existing clients.
- Checks: company registry, ultimate beneficial owners (25% threshold), directors, sanctions and PEP screening, \
adverse media, source of funds for high-risk cases.
- Risk scale: low, medium, high, prohibited — the officer sets it; you suggest with reasons.
- Escalate to enhanced due diligence when: a sanctions or PEP hit is confirmed, the ownership chain has more \
than three layers, or a high-risk jurisdiction is involved.
"""

KYC_TOOLS_MD = """\
# Tool notes

- screen_sanctions: screen every UBO and director, not only the company. A partial name match is a potential \
hit until the date of birth or nationality rules it out.
- fetch_registry_extract: extracts older than 90 days are not acceptable evidence; fetch a fresh one.
- request_documents: ask for certified copies only; give the client 10 working days.
"""

KYC_TOOLS = (
    DemoTool(
        "screen_sanctions",
        "Screen a person or organisation against EU, UN, UK and OFAC sanctions lists and the PEP database.",
        _schema(
            {
                "name": {"type": "string", "minLength": 2, "maxLength": 200},
                "entity_type": {"type": "string", "enum": ["person", "organisation"]},
                "country": {"type": "string", "pattern": "^[A-Z]{2}$", "description": "ISO 3166-1 alpha-2"},
                "date_of_birth": {"type": "string", "format": "date"},
                "lists": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["EU", "UN", "UK_OFSI", "OFAC_SDN", "PEP"]},
                    "uniqueItems": True,
                },
            },
            ["name", "entity_type"],
        ),
    ),
    DemoTool(
        "fetch_registry_extract",
        "Fetch the current commercial-registry extract of a company: officers, shareholders, filings.",
        _schema(
            {
                "company_number": {"type": "string", "maxLength": 40},
                "jurisdiction": {"type": "string", "pattern": "^[A-Z]{2}$"},
            },
            ["company_number", "jurisdiction"],
        ),
    ),
    DemoTool(
        "request_documents",
        "Send the client a document request for a KYC case through the onboarding portal.",
        _schema(
            {
                "case_id": {"type": "string", "pattern": "^KYC-[0-9]{5}$"},
                "documents": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "string",
                        "enum": [
                            "certified_passport_copy",
                            "proof_of_address",
                            "shareholder_register",
                            "source_of_funds_statement",
                            "audited_financials",
                        ],
                    },
                },
                "due_date": {"type": "string", "format": "date"},
            },
            ["case_id", "documents"],
        ),
    ),
)

KYC_LMARTIN_MEMORY = """\
# Long-term memory — officer-lmartin

- KYC-55021 Helios Logistics GmbH: UBO chain verified to two natural persons; certified passport copy of the \
second UBO outstanding until 2026-12-01.
- KYC-55034 Nordlicht Solar AG: periodic review done 2026-11-18, risk unchanged (medium).
- Prefers the weekly case digest on Monday mornings.
"""

KYC_LMARTIN_AGENT_WRITE = (
    KYC_LMARTIN_MEMORY
    + """\
- KYC-55107 Baltic Amber Trading OÜ: adverse-media hit on a former director (2019 customs fraud report); \
suggested EDD, officer to decide.
"""
)

KYC_USERS = (
    DemoUser(
        "officer-lmartin",
        user_md=(
            """\
# Officer profile — L. Martin

- Senior KYC officer, corporate onboarding, EU desk (Frankfurt).
- Wants findings as a table: entity, check, result, source, date.
- Reads German and French registry extracts; translate only the relevant lines.
""",
        ),
        memory_md=(KYC_LMARTIN_MEMORY,),
        sessions=(
            DemoSession(
                "demo-kyc-lmartin-01",
                (
                    ("user", "Screen the directors of Baltic Amber Trading OÜ for case KYC-55107."),
                    ("tool", "screen_sanctions 'Baltic Amber Trading OÜ' organisation EE → no hit"),
                    ("tool", "screen_sanctions 3 directors → 0 sanctions hits, 0 PEP hits"),
                    (
                        "assistant",
                        "No sanctions or PEP hits for the company or its three current directors. "
                        "Adverse media shows a 2019 customs fraud report naming a former director.",
                    ),
                    ("note", "KYC-55107: adverse-media hit on a former director; suggest EDD."),
                    ("user", "Remember that I want adverse-media hits quoted with the article date and outlet."),
                    ("assistant", "Noted: I'll quote the outlet and publication date with every adverse-media hit."),
                ),
            ),
            DemoSession(
                "demo-kyc-lmartin-02",
                (
                    ("user", "What is still missing for Helios Logistics?"),
                    (
                        "assistant",
                        "KYC-55021 still needs the certified passport copy of the second UBO; the "
                        "request is due on 1 December.",
                    ),
                    ("note", "KYC-55021: one document outstanding, due 2026-12-01."),
                ),
            ),
        ),
    ),
    DemoUser(
        "officer-tnguyen",
        user_md=(
            """\
# Officer profile — T. Nguyen

- KYC officer, periodic reviews of existing corporate clients.
- Prefers short bullet summaries over tables.
""",
        ),
        memory_md=(
            """\
# Long-term memory — officer-tnguyen

- Periodic review batch for Q4 2026: 14 clients, 9 done as of 2026-11-25.
- KYC-54980 Delft Marine BV: shareholder register requested, due 2026-12-05.
""",
        ),
        sessions=(
            DemoSession(
                "demo-kyc-tnguyen-01",
                (
                    ("user", "Fetch a fresh registry extract for Delft Marine BV, number 34512876."),
                    ("tool", "fetch_registry_extract 34512876 NL → extract dated 2026-11-26, 2 shareholders"),
                    (
                        "assistant",
                        "Fresh extract received (26 November 2026): two shareholders, no changes to the "
                        "directors since the last review.",
                    ),
                    ("note", "KYC-54980: registry extract refreshed 2026-11-26."),
                ),
            ),
        ),
    ),
)


# --- legal-researcher: regulatory research, full context, direct writes ------------------------------

LEGAL_SOUL = """\
# Regulatory Research Assistant

- You help Demo Bank's legal and compliance counsel research EU and UK financial regulation.
- Cite the instrument, article and version for every statement (e.g. DORA Art. 28(2), Regulation (EU) 2022/2554).
- Distinguish what the text says from interpretation; label interpretation and name its source \
(EBA guidelines, Q&A, case law).
- You do not give legal advice to customers; your readers are the bank's own lawyers.
- Say when a provision is not yet in force or has transitional rules.
"""

LEGAL_ABOUT = """\
# Research areas

- Operational resilience: DORA, the EBA ICT risk guidelines, outsourcing registers.
- Payments: PSD2 and the PSD3/PSR proposals, strong customer authentication, APP fraud reimbursement (UK).
- AML/CFT: AMLR and AMLD6, the new AMLA, travel rule for crypto transfers.
- Data protection: GDPR and EDPB guidelines as they apply to banking.
- Consumer protection: Consumer Credit Directive 2, the UK Consumer Duty.
"""

LEGAL_TOOLS_MD = """\
# Tool notes

- search_regulations: filter by jurisdiction and in_force_on so repealed text is not quoted as current.
- fetch_document: prefer the consolidated version; state its date.
- check_citation: run it on every article number before the answer goes out.
"""

LEGAL_TOOLS = (
    DemoTool(
        "search_regulations",
        "Full-text search over EU and UK financial regulation, guidelines and supervisory statements.",
        _schema(
            {
                "query": {"type": "string", "minLength": 3, "maxLength": 300},
                "jurisdiction": {"type": "string", "enum": ["EU", "UK"]},
                "instrument_type": {
                    "type": "string",
                    "enum": ["regulation", "directive", "guideline", "rts", "supervisory_statement", "case_law"],
                },
                "in_force_on": {"type": "string", "format": "date"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 25, "default": 10},
            },
            ["query"],
        ),
    ),
    DemoTool(
        "fetch_document",
        "Fetch one instrument by CELEX number or UK legislation id, optionally one article only.",
        _schema(
            {
                "document_id": {"type": "string", "maxLength": 60, "description": "e.g. 32022R2554"},
                "article": {"type": "string", "maxLength": 20},
                "consolidated": {"type": "boolean", "default": True},
            },
            ["document_id"],
        ),
    ),
    DemoTool(
        "check_citation",
        "Check that a citation (instrument, article, paragraph) exists and is in force on a date.",
        _schema(
            {
                "citation": {"type": "string", "maxLength": 200},
                "as_of": {"type": "string", "format": "date"},
            },
            ["citation"],
        ),
    ),
)

LEGAL_USERS = (
    DemoUser(
        "counsel-apatel",
        user_md=(
            """\
# Counsel profile — A. Patel

- Senior counsel, technology and outsourcing contracts.
- Wants answers in memo style: question, short answer, analysis, sources.
- Uses British spelling.
""",
        ),
        memory_md=(
            """\
# Long-term memory — counsel-apatel

- Working on the DORA register of information for the cloud contracts; first submission due 2027-04-30.
- Asked to track the EBA Q&A on subcontracting chains (DORA Art. 30) until it is published.
""",
        ),
        sessions=(
            DemoSession(
                "demo-legal-apatel-01",
                (
                    (
                        "user",
                        "Which contractual provisions does DORA require for ICT services supporting "
                        "critical functions?",
                    ),
                    (
                        "tool",
                        "search_regulations 'contractual provisions critical or important functions' EU "
                        "→ DORA Art. 30(2) and 30(3)",
                    ),
                    (
                        "assistant",
                        "Article 30(3) of Regulation (EU) 2022/2554 adds, for critical or important "
                        "functions, service levels with precise targets, notice periods, exit "
                        "strategies and participation in TLPT, on top of the Art. 30(2) baseline.",
                    ),
                    ("user", "I prefer the memo format with sources at the end, please keep it that way."),
                    ("note", "Directive: memo format, sources at the end."),
                ),
            ),
            DemoSession(
                "demo-legal-apatel-02",
                (
                    ("user", "Any news on the EBA Q&A about subcontracting chains?"),
                    ("tool", "search_regulations 'subcontracting ICT services Q&A' EU guideline → no new item"),
                    (
                        "assistant",
                        "Nothing new has been published since the RTS on subcontracting; I'll keep checking.",
                    ),
                ),
            ),
        ),
    ),
    DemoUser(
        "counsel-rkim",
        user_md=(
            """\
# Counsel profile — R. Kim

- Counsel, payments and consumer protection, UK branch.
- Prefers short answers first, details on request.
""",
        ),
        memory_md=(
            """\
# Long-term memory — counsel-rkim

- Researching the PSR APP fraud reimbursement rules; internal briefing on 2026-12-08.
""",
        ),
        sessions=(
            DemoSession(
                "demo-legal-rkim-01",
                (
                    ("user", "What is the maximum reimbursement under the APP fraud rules?"),
                    ("tool", "search_regulations 'APP scams reimbursement maximum' UK → PSR SD20"),
                    (
                        "assistant",
                        "Short answer: 85,000 GBP per claim under PSR Specific Direction 20, in force "
                        "since 7 October 2024. Details on the consumer standard of caution on request.",
                    ),
                    ("note", "Answered APP reimbursement cap question (PSR SD20)."),
                ),
            ),
        ),
    ),
)


AGENTS: tuple[DemoAgent, ...] = (
    DemoAgent(
        slug="support-bot",
        name="Aria — retail customer support",
        description="Chat assistant for Demo Bank's retail customers: cards, payments, disputes and callbacks.",
        strategy=Strategy.HYBRID_V2,
        write_policy=WritePolicy.DIRECT,
        backend=Backend.HEURISTIC,
        soul=SUPPORT_SOUL,
        about=SUPPORT_ABOUT,
        tools_md=SUPPORT_TOOLS_MD,
        tools=SUPPORT_TOOLS,
        users=SUPPORT_USERS,
    ),
    DemoAgent(
        slug="kyc-analyst",
        name="KYC review analyst",
        description="Prepares corporate due-diligence findings for the onboarding compliance officers.",
        strategy=Strategy.HYBRID_V1,
        write_policy=WritePolicy.REVIEW,
        backend=Backend.HEURISTIC,
        soul=KYC_SOUL,
        about=KYC_ABOUT,
        tools_md=KYC_TOOLS_MD,
        tools=KYC_TOOLS,
        users=KYC_USERS,
    ),
    DemoAgent(
        slug="legal-researcher",
        name="Regulatory research assistant",
        description="Researches EU and UK financial regulation for the bank's legal and compliance counsel.",
        strategy=Strategy.FULL,
        write_policy=WritePolicy.DIRECT,
        backend=Backend.HEURISTIC,
        soul=LEGAL_SOUL,
        about=LEGAL_ABOUT,
        tools_md=LEGAL_TOOLS_MD,
        tools=LEGAL_TOOLS,
        users=LEGAL_USERS,
    ),
)


# The consolidation proposal's rationale: each item cites the log lines it
# rests on, by their exact text (ids are looked up after the logs exist).
def _consolidation_rationale(evidence: Callable[[str], int]) -> list[dict[str, object]]:
    return [
        {
            "kind": "supersede",
            "summary": "Preferred contact: phone callbacks in the morning → email.",
            "reason": "The customer asked to be contacted by email from now on; the older phone preference is "
            "superseded rather than silently dropped.",
            "evidence": [
                evidence("From now on please contact me by email rather than phone, my working hours changed."),
                evidence("Directive: preferred contact channel changed from phone to email (2026-10-28)."),
            ],
        },
        {
            "kind": "add",
            "summary": "Written summaries in Portuguese.",
            "reason": "New standing preference stated by the customer.",
            "evidence": [
                evidence("I prefer written summaries in Portuguese from now on, if that's possible."),
                evidence("Directive: written summaries in Portuguese."),
            ],
        },
        {
            "kind": "update",
            "summary": "Dispute DSP-20931: opened → resolved, refund received 2026-11-12.",
            "reason": "A later dispute status check shows the merchant refund.",
            "evidence": [
                evidence("dispute_status DSP-20931 → resolved: merchant refund 42.90 EUR credited 2026-11-12"),
                evidence("Dispute DSP-20931 resolved: refund received 2026-11-12."),
            ],
        },
        {
            "kind": "expire",
            "summary": "Removed the Portugal travel note.",
            "reason": "Its stated expiry (until 2026-11-15) has passed and the customer said the trip is over.",
            "evidence": [evidence("Travel notice: Spain, 2026-12-10 until 2027-01-05. Portugal trip over.")],
        },
        {
            "kind": "add",
            "summary": "Travelling in Spain from 2026-12-10 until 2027-01-05.",
            "reason": "New travel notice; card payments in Spain are expected in that window.",
            "evidence": [
                evidence(
                    "I'm back from Lisbon now. Please remember that I'll be in Madrid from 10 December until "
                    "5 January, so don't block my card there."
                ),
            ],
        },
        {
            "kind": "merge",
            "summary": "Statement reminders: merged the monthly reminder with the newer, more precise directive.",
            "reason": "Both entries describe the same reminder; the newer one (three days before the due date, "
            "until 2027-06-30) replaces the older expiry of 2026-12-01.",
            "evidence": [
                evidence("Statement reminder requested, monthly, until 2026-12-01."),
                evidence("Directive: statement reminder 3 days before due date, short, until 2027-06-30."),
            ],
        },
    ]


# --- seeding --------------------------------------------------------------------------------


@dataclass
class SeedReport:
    created: Counter[str] = field(default_factory=Counter)
    skipped: list[str] = field(default_factory=list)

    def add(self, what: str, count: int = 1) -> None:
        self.created[what] += count

    def summary(self) -> str:
        if not self.created:
            head = "Demo data already complete: nothing was added."
        else:
            parts = ", ".join(f"{what} {count}" for what, count in self.created.items())
            head = f"Seeded the demo workspace. Added: {parts}."
        if self.skipped:
            head += "\nLeft alone (changed since seeding): " + "; ".join(self.skipped)
        return head


def logins_table() -> str:
    rows = [("username", "password", "role in demo")]
    rows += [(s.username, s.password, s.role + (" (superuser)" if s.superuser else "")) for s in STAFF]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return (
        "Logins (workspace demo; review console at /, Django admin at /django-admin/):\n"
        + "\n".join(lines)
        + "\nPasswords are set only when seed_demo creates the user."
    )


class _Seeder:
    def __init__(self, log: Callable[[str], object] | None) -> None:
        self.report = SeedReport()
        self._log = log or (lambda _message: None)

    def say(self, message: str) -> None:
        self._log(message)

    # staff

    def staff(self, workspace: Workspace) -> dict[str, Any]:
        users: dict[str, object] = {}
        for spec in STAFF:
            user, created = services.ensure_staff_user(
                username=spec.username, email=spec.email, password=spec.password, check_password=False
            )
            if created:
                self.report.add("staff users")
                self.say(f"  user {spec.username}")
            if spec.superuser and services.grant_superuser(user=user):
                self.report.add("superuser grants")
            # An existing membership is left as it is: someone may have
            # changed the role on purpose since the demo was seeded.
            if not Membership.objects.filter(user=user, workspace=workspace).exists():
                services.set_role(user=user, workspace=workspace, role=spec.role)
                self.report.add("roles")
            users[spec.username] = user
        return users

    # agents

    def agent(self, workspace: Workspace, spec: DemoAgent) -> Agent:
        agent = Agent.objects.filter(slug=spec.slug).first()
        if agent is None:
            agent = services.create_agent(
                workspace=workspace,
                slug=spec.slug,
                actor=services.SYSTEM,
                name=spec.name,
                description=spec.description,
                strategy=spec.strategy,
                write_policy=spec.write_policy,
                backend=spec.backend,
            )
            self.report.add("agents")
            self.say(f"  agent {spec.slug}")
        existing = set(ToolSetting.objects.filter(agent=agent).values_list("name", flat=True))
        for position, tool in enumerate(spec.tools):
            if tool.name not in existing:
                services.register_tool(
                    agent=agent,
                    actor=services.SYSTEM,
                    name=tool.name,
                    description=tool.description,
                    parameters=tool.parameters,
                    position=position,
                )
                self.report.add("tools")
        return agent

    # files

    def file_versions(
        self, *, agent: Agent, kind: str, user_ref: str, versions: tuple[str, ...], admin: object, reviewer: Actor
    ) -> None:
        """Bring the file to the last of `versions`, one version each, only
        if its history so far is exactly the seeded one."""
        file = services.get_file(agent=agent, kind=kind, user_ref=user_ref)
        done = file.version if file else 0
        if done >= len(versions):
            return
        if done and file is not None and file.content != versions[done - 1]:
            self.report.skipped.append(f"{agent.slug}/{kind}{' ' + user_ref if user_ref else ''}")
            return
        for content in versions[done:]:
            self.apply(agent=agent, kind=kind, user_ref=user_ref, content=content, admin=admin, reviewer=reviewer)
            self.report.add("file versions")

    def apply(self, *, agent: Agent, kind: str, user_ref: str, content: str, admin: Any, reviewer: Actor) -> None:
        reason = "Demo data"
        if agent.write_policy == WritePolicy.DIRECT:
            services.write_memory(agent=agent, kind=kind, user_ref=user_ref or None, content=content, reason=reason)
            return
        # Under `review` nothing is served until a reviewer approves: persona
        # files come from the admin's editor, user files from the agent.
        proposal = (
            Proposal.objects.pending()
            .for_file(agent, kind, user_ref)
            .filter(proposed_content=content)
            .order_by("-id")
            .first()
        )
        if proposal is None:
            if kind in AGENT_SCOPED:
                proposal = services.propose_change(
                    agent=agent, kind=kind, content=content, source=Source.ADMIN, reason=reason, author_user=admin
                )
            else:
                result = services.write_memory(
                    agent=agent, kind=kind, user_ref=user_ref, content=content, reason=reason
                )
                proposal = result.proposal
            assert proposal is not None
        services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer, comment="Checked for the demo.")

    # sessions

    def session(self, agent: Agent, user_ref: str, spec: DemoSession) -> None:
        session = AgentSession.objects.filter(agent=agent, user_ref=user_ref, external_id=spec.external_id).first()
        if session is None:
            session = services.start_session(agent=agent, user_ref=user_ref, external_id=spec.external_id)
            self.report.add("sessions")
        if not session.is_ended and not LogEntry.objects.filter(session=session).exists():
            # One batch: append_log is all or nothing, so a session has
            # either no entries or all of them.
            services.append_log(
                session=session, entries=[{"role": role, "content": content} for role, content in spec.entries]
            )
            self.report.add("log entries", len(spec.entries))
        if spec.ended and not session.is_ended:
            services.end_session(session=session)

    # pending proposals

    def pending_proposals(self, agents: dict[str, Agent], users: dict[str, Any]) -> None:
        admin = users[ADMIN_USERNAME]

        # admin: a persona edit waiting for a second pair of eyes.
        support = agents["support-bot"]
        self._propose_once(
            agent=support,
            kind=FileKind.SOUL,
            user_ref="",
            source=Source.ADMIN,
            expected_base=SUPPORT_SOUL,
            content=SUPPORT_SOUL_TWEAK,
            make=lambda: services.propose_change(
                agent=support,
                kind=FileKind.SOUL,
                content=SUPPORT_SOUL_TWEAK,
                source=Source.ADMIN,
                reason="Consumer Duty: offer the Financial Support team first when a customer may be vulnerable.",
                author_user=admin,
            ),
        )

        # agent: a review-policy agent's own memory write.
        kyc = agents["kyc-analyst"]
        self._propose_once(
            agent=kyc,
            kind=FileKind.MEMORY,
            user_ref="officer-lmartin",
            source=Source.AGENT,
            expected_base=KYC_LMARTIN_MEMORY,
            content=KYC_LMARTIN_AGENT_WRITE,
            make=lambda: (
                services.write_memory(
                    agent=kyc,
                    kind=FileKind.MEMORY,
                    user_ref="officer-lmartin",
                    content=KYC_LMARTIN_AGENT_WRITE,
                    reason="New adverse-media finding on KYC-55107.",
                ).proposal
            ),
        )

        # consolidation: the dreaming output for the pair with six sessions.
        def evidence(text: str) -> int:
            entry_id = (
                LogEntry.objects.filter(agent=support, user_ref="cust-1042", content=text)
                .order_by("id")
                .values_list("id", flat=True)
                .first()
            )
            if entry_id is None:
                raise LookupError(f"demo log entry missing: {text!r}")
            return entry_id

        self._propose_once(
            agent=support,
            kind=FileKind.MEMORY,
            user_ref="cust-1042",
            source=Source.CONSOLIDATION,
            expected_base=CUST_1042_MEMORY_V2,
            content=CUST_1042_CONSOLIDATED,
            make=lambda: services.propose_change(
                agent=support,
                kind=FileKind.MEMORY,
                user_ref="cust-1042",
                content=CUST_1042_CONSOLIDATED,
                source=Source.CONSOLIDATION,
                reason="Consolidated the 6 sessions ended since the last run.",
                rationale=_consolidation_rationale(evidence),
            ),
        )

    def _propose_once(
        self,
        *,
        agent: Agent,
        kind: str,
        user_ref: str,
        source: str,
        expected_base: str,
        content: str,
        make: Callable[[], Proposal | None],
    ) -> None:
        # Any status counts: a demo proposal someone has already decided
        # stays decided rather than coming back.
        if Proposal.objects.for_file(agent, kind, user_ref).filter(source=source, proposed_content=content).exists():
            return
        file = services.get_file(agent=agent, kind=kind, user_ref=user_ref)
        if file is None or file.content != expected_base:
            self.report.skipped.append(f"{source} proposal for {agent.slug}/{kind} (file changed)")
            return
        make()
        self.report.add("pending proposals")


def _seed_base(seeder: _Seeder, *, sessions: bool) -> tuple[dict[str, Agent], dict[str, object]]:
    workspace, created = services.ensure_workspace(slug=WORKSPACE_SLUG, name=WORKSPACE_NAME)
    if created:
        seeder.report.add("workspaces")
    users = seeder.staff(workspace)
    admin, reviewer = users[ADMIN_USERNAME], users[REVIEWER_USERNAME]

    agents: dict[str, Agent] = {}
    for spec in AGENTS:
        agent = seeder.agent(workspace, spec)
        agents[spec.slug] = agent
        for kind, content in (
            (FileKind.SOUL, spec.soul),
            (FileKind.ABOUT, spec.about),
            (FileKind.TOOLS, spec.tools_md),
        ):
            seeder.file_versions(
                agent=agent, kind=kind, user_ref="", versions=(content,), admin=admin, reviewer=reviewer
            )
        for user in spec.users:
            for kind, versions in ((FileKind.USER, user.user_md), (FileKind.MEMORY, user.memory_md)):
                seeder.file_versions(
                    agent=agent, kind=kind, user_ref=user.user_ref, versions=versions, admin=admin, reviewer=reviewer
                )
        if sessions:
            for user in spec.users:
                for session in user.sessions:
                    seeder.session(agent, user.user_ref, session)
    return agents, users


def _current_role() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        return str(cursor.fetchone()[0])


def _not_the_owner() -> str:
    return (f"the database role {_current_role()!r} may not open the seeding window: under role separation only "
            "the tables' owner (the role migrate runs as, MIGRATE_DATABASE_URL) may, so the "
            f"{demo_history.HISTORY_DAYS} days of demo history cannot be written as this role. Nothing was "
            "seeded and the database is still empty. Seed it once as the owner "
            "(DATABASE_URL=\"$MIGRATE_DATABASE_URL\" python manage.py seed_demo), or seed the demo without "
            "history as this role (python manage.py seed_demo --no-history).")


def _seed_history(seeder: _Seeder) -> None:
    """On an empty database only: the workspace as it was set up 14 days ago
    and 14 days of use since, in one transaction inside the seeding window
    (memoryhub.demo_history, memoryhub.immutability)."""
    now = timezone.now()
    with transaction.atomic():
        if not immutability.open_seed_window(connection, note=f"seed_demo: {demo_history.HISTORY_DAYS} days of "
                                             f"demo history, written {now:%Y-%m-%d %H:%M} UTC"):
            if immutability.seed_window(connection) is not None:
                return  # seeded before; nothing to say
            if not immutability.may_open_seed_window(connection):
                if immutability.database_is_empty(connection):
                    # Seeding the rest now would make the database non-empty
                    # and the history impossible for good: stop instead.
                    raise errors.Invalid(_not_the_owner(), reason="seed_window_refused")
                seeder.report.skipped.append(
                    f"the {demo_history.HISTORY_DAYS} days of history (the database already held data, and the "
                    f"database role {_current_role()!r} may not open the seeding window anyway)")
                return
            seeder.report.skipped.append(f"the {demo_history.HISTORY_DAYS} days of history (the database already "
                                         "held data; history is only ever seeded into an empty database)")
            return
        with demo_history.demo_clock(now - timedelta(days=demo_history.HISTORY_DAYS)):
            agents, users = _seed_base(seeder, sessions=False)
        demo_history.play(agents=agents, users=users, now=now, report=seeder.report)
        immutability.close_seed_window(connection)
    seeder.say(f"  {demo_history.HISTORY_DAYS} days of history")


def seed_demo(*, log: Callable[[str], object] | None = None, history: bool = True) -> SeedReport:
    """Create whatever part of the demo data is missing. Each object is
    created in its own service transaction, so an interrupted run leaves a
    consistent database that the next run completes. On an empty database the
    first run also writes 14 days of history (all in one transaction)."""
    seeder = _Seeder(log)
    if history:
        _seed_history(seeder)
    agents, users = _seed_base(seeder, sessions=True)
    seeder.pending_proposals(agents, users)
    return seeder.report
