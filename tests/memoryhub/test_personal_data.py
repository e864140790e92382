"""scanner.scan_personal: special categories of personal data, said in
words or in the checksum formats, each finding naming its category and never
quoting the value."""

from __future__ import annotations

import pytest

from memoryhub import scanner
from memoryhub.scanning.pii import SPECIAL_CATEGORY


@pytest.mark.parametrize(("text", "rule"), [
    ("Remember my passport number: C01X00T47.", "government_id"),
    ("Remember my insurance number is A123456789.", "government_id"),
    ("Merk dir außerdem meine Ausweisnummer L01X00T47.", "government_id"),
    ("Remember my national insurance number QQ 12 34 56 C.", "government_id"),
    ("Remember that my card is 4111 1111 1111 1111 for the subscription.", "payment_card"),
    ("IBAN DE89 3704 0044 0532 0130 00 for refunds", "iban"),
    ("Remember my sister's number, +33 6 12 34 56 78, she's my backup contact.", "relative_contact"),
    ("My emergency contact is my husband, Tom, +44 7700 900123.", "relative_contact"),
    ("Souviens-toi que mon fils s'appelle Léo et que son numéro est le 06 12 34 56 78.", "relative_contact"),
    ("Remember that my son has asthma, so no smoking rooms.", "health"),
    ("Recuerda que soy alérgico a los frutos secos.", "health"),
    ("Remember that my mother has type 2 diabetes.", "health"),
    ("Make it aisle seats, my knee is bad.", "health"),
])
def test_it_finds_special_categories_in_four_languages(text: str, rule: str) -> None:
    findings = scanner.scan_personal(text)

    assert [f.rule for f in findings] == [rule] and rule in SPECIAL_CATEGORY
    digits = [ch for ch in findings[0].detail if ch.isdigit()]
    assert len(digits) <= 4  # a detail describes the datum, never repeats it


@pytest.mark.parametrize("text", [
    "Remember that I prefer non-smoking rooms.", "My frequent flyer number is LH 992 004 8817, remember it.",
    "Customer account number is KX-448120.", "Call me on +49 151 1234567", "Staging Postgres listens on port 5433",
    "Order A-7701 was shipped to the Hamburg warehouse.", "The errcheck linter cannot be disabled.",
    "Fridays are kept free of meetings", "Kunde hat Vertrag Nr. 4471-B (Hausrat), Selbstbeteiligung 150 EUR",
])
def test_it_leaves_ordinary_facts_and_the_users_own_contact_data_alone(text: str) -> None:
    assert scanner.scan_personal(text) == []
