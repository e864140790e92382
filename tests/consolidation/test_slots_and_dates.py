"""Slots (one value per attribute, across both files), dates (dateparser,
the user's time zone, events turned into history) and languages (lingua,
pysbd): pure functions, no database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from consolidation import dates, language, slots

FRIDAY = datetime(2026, 12, 11, 9, 0, tzinfo=UTC)
MONDAY = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


# --- slots ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new", "slot"), [
    ("Use npm for installs.", "The monorepo now uses pnpm; the team switched last week.", "js package manager"),
    ("Indent with 4 spaces.", "The team agreed on 2-space indentation for the TypeScript code.", "indentation"),
    ("Uses tabs for indentation.", "Use 4 spaces instead of tabs.", "indentation"),
    ("Timezone is Europe/London.", "Timezone is Europe/Dublin, not London.", "timezone"),
    ("Time zone is Europe/Berlin.", "Timezone is Asia/Singapore now.", "timezone"),
    ("Bevorzugt Antworten auf Deutsch.", "Bevorzugt Antworten auf Englisch.", "language"),
    ("User seems to prefer replies in Spanish.", "Reply in English.", "language"),
    ("Prefers German for letters.", "Write to them in English.", "language"),
    ("Manager is Priya Shah.", "Manager is Priya Nair.", "manager"),
    ("Address is Lindenstraße 4, 10115 Berlin.", "Address is Hauptstraße 17, 80331 München.", "address"),
    ("Follow-up with Dr. Brandt on 2026-12-09 at 14:00.", "Follow-up with Dr. Brandt moved to 2026-12-10 at 14:00.",
     "appointment"),
    ("Uses VS Code.", "Switched to Neovim a while ago.", "editor"),
    ("Prefers window seats on long-haul flights.", "Prefers aisle seats.", "seat"),
    ("Staging Postgres listens on port 5433.", "Staging Postgres now listens on port 6432.", "port"),
    ("Account id is ACC-50417-22.", "Account id is ACC-50471-22.", "id"),
])
def test_a_newer_value_of_the_same_slot_supersedes_the_older(old: str, new: str, slot: str) -> None:
    reason = slots.supersedes(old, new)

    assert reason is not None and slot in reason


@pytest.mark.parametrize(("old", "new", "value"), [
    ("Prefers email for updates.", "Call them on their mobile instead of emailing.", "email"),
    ("Bevorzugt Briefe per Post, z. B. für Vertragsänderungen.", "Nur noch E-Mails statt Briefe.", "post"),
    ("Prefiere que le escriban por WhatsApp.", "Prefiere el correo electrónico en lugar de WhatsApp.", "whatsapp"),
    ("Prefers CSV exports over Excel.", "Prefers Excel exports instead of CSV.", "csv"),
])
def test_a_newer_entry_that_rules_out_the_older_value_supersedes_it(old: str, new: str, value: str) -> None:
    assert slots.supersedes(old, new) == f'the newer one rules out "{value}"'


@pytest.mark.parametrize(("old", "new"), [
    ("Prefers email for routine updates.", "Prefers a phone call for urgent updates."),
    ("Always run the linter before committing.", "Reply in German."),
    ("Prefers short answers.", "Prefers answers in French."),
    ("Bevorzugt Commit-Messages auf Englisch.", "Antworte dem Nutzer auf Deutsch."),
    ("Prefers pytest over unittest.", "Tests laufen mit vitest; Coverage-Schwelle 80 %."),
])
def test_compatible_preferences_both_stay(old: str, new: str) -> None:
    assert slots.supersedes(old, new) is None


# --- dates ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("said", "lang", "at", "stored"), [
    ("Is out of office next Friday.", "en", FRIDAY, "Is out of office on 2026-12-18."),
    ("The quarterly report is due in two weeks.", "en", FRIDAY, "The quarterly report is due on 2026-12-25."),
    ("Is working from the Berlin office until the end of the month.", "en", FRIDAY,
     "Is working from the Berlin office until 2026-12-31."),
    ("Is on vacation until Friday.", "en", MONDAY, "Is on vacation until 2026-12-04."),
    ("The office is closed for two weeks.", "en", MONDAY, "The office is closed until 2026-12-14."),
    ("Is traveling to Singapore in July.", "en", FRIDAY, "Is traveling to Singapore in July 2027."),
    ("Is in Tokyo for a week in two weeks.", "en", FRIDAY, "Is in Tokyo for a week from 2026-12-25."),
    ("Hat nächsten Freitag frei.", "de", FRIDAY, "Hat am 2026-12-18 frei."),
    ("Ist bis Freitag im Urlaub.", "de", MONDAY, "Ist bis 2026-12-04 im Urlaub."),
    ("Urlaub bis zum 24. Dezember.", "de", MONDAY, "Urlaub bis 2026-12-24."),
    ("Est en déplacement dans deux semaines.", "fr", FRIDAY, "Est en déplacement le 2026-12-25."),
    ("Est en vacances jusqu'à vendredi.", "fr", MONDAY, "Est en vacances jusqu'au 2026-12-04."),
    ("La oficina está cerrada hasta fin de mes.", "es", FRIDAY, "La oficina está cerrada hasta el 2026-12-31."),
])
def test_relative_dates_become_absolute_against_the_time_they_were_said(said: str, lang: str, at: datetime,
                                                                       stored: str) -> None:
    assert dates.resolve_relative(said, at=at, language=lang) == stored


@pytest.mark.parametrize("habit", ["Deploys happen on Fridays.", "Deploy happens on Friday.",
                                   "Works from home on Mondays and Thursdays.", "Prefers morning appointments.",
                                   "Arbeitet meistens von 8 bis 16 Uhr."])
def test_habits_are_not_dates(habit: str) -> None:
    assert dates.resolve_relative(habit, at=MONDAY) == habit


def test_a_date_is_resolved_in_the_users_time_zone_when_known() -> None:
    # 23:30 UTC on Monday is already Tuesday 08:30 in Tokyo: "tomorrow" is Wednesday.
    late = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)
    tokyo = dates.user_timezone(["Prefers email.", "Time zone is Asia/Tokyo."])

    assert tokyo is not None and late.astimezone(tokyo).date() == date(2026, 12, 1)
    assert dates.resolve_relative("Is off tomorrow.", at=late, tz=tokyo) == "Is off on 2026-12-02."
    assert dates.resolve_relative("Is off tomorrow.", at=late) == "Is off on 2026-12-01."
    assert dates.user_timezone(["Timezone is UTC+9."]) == timezone(timedelta(hours=9))
    assert dates.user_timezone(["Prefers email."]) is None


@pytest.mark.parametrize(("entry", "lang", "history"), [
    ("Is traveling to Singapore in July 2026.", "en", "Traveled to Singapore in July 2026."),
    ("Is flying to Lisbon on 2026-12-18 for a conference.", "en", "Flew to Lisbon on 2026-12-18 for a conference."),
    ("Is out of office on 2026-12-18.", "en", "Was out of office on 2026-12-18."),
    ("The quarterly report is due on 2026-12-25.", "en", "The quarterly report was due on 2026-12-25."),
    ("Hat am 2026-12-18 frei.", "de", "Hatte am 2026-12-18 frei."),
    ("Est en déplacement le 2026-12-25.", "fr", "Était en déplacement le 2026-12-25."),
    ("Follow-up with Dr. Brandt on 2026-12-17 at 14:00.", "en",
     "Follow-up with Dr. Brandt on 2026-12-17 at 14:00 (past)."),
])
def test_a_passed_event_is_written_in_the_past_tense_once(entry: str, lang: str, history: str) -> None:
    assert dates.past_tense(entry, lang) == history
    assert dates.past_tense(history, lang) == history


def test_events_and_states_are_told_apart() -> None:
    assert dates.event_of("Is in Tokyo from 2026-12-25 for a week.") == ("2026-12-25 for a week", date(2027, 1, 1))
    assert dates.event_of("Is traveling to Singapore in July 2027.") == ("in July 2027", date(2027, 7, 31))
    assert dates.event_of("Is on vacation until 2026-12-04.") is None
    assert dates.expiry_of("Is on vacation until 2026-12-04.") == ("until 2026-12-04", date(2026, 12, 4))
    assert dates.event_of("Has worked here since 2026-03-01.") is None


# --- languages and sentences -------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "code"), [
    ("Thanks!", "en"), ("Call me Dana.", "en"), ("Ich bevorzuge kurze Antworten.", "de"),
    ("Vivo en Valencia desde marzo.", "es"), ("En fait, je préfère être contacté par e-mail.", "fr"),
    ("Preferisco le risposte brevi, ricordalo per favore.", "it"),
    ("Запомни, что я предпочитаю короткие ответы.", "ru"),
    ("覚えておいて：私はメールより電話が好きです。", "ja"), ("ok", "unknown"), ("1234", "unknown"),
])
def test_languages_are_detected_offline_with_short_chat_decided_by_function_words(text: str, code: str) -> None:
    assert language.detect(text) == code


def test_sentences_are_not_cut_at_abbreviations() -> None:
    assert language.sentences("Merk dir bitte, dass mein Ansprechpartner Dr. Weber ist. Er ist vormittags da.",
                              "de") == ["Merk dir bitte, dass mein Ansprechpartner Dr. Weber ist.",
                                        "Er ist vormittags da."]
    assert language.sentences("Ich bevorzuge Briefe per Post, z. B. für Vertragsänderungen.", "de") == [
        "Ich bevorzuge Briefe per Post, z. B. für Vertragsänderungen."]
    assert language.sentences("Sorry, I meant Thursday.\nCan we move it?") == ["Sorry, I meant Thursday.",
                                                                               "Can we move it?"]
