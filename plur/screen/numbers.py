"""Payment card numbers and national identity numbers, found by their shape and their check digits.

* **Payment cards** (kind ``payment-card``): 13 to 19 digits, whole or in groups split by single spaces or
  dashes, whose issuer prefix is a card network's (Visa 4, Mastercard 51-55 and 2221-2720, American Express
  34/37, Discover 6011/644-649/65, JCB 3528-3589, Diners 300-305/36/38/39, UnionPay 62, Maestro 50/56-58/63/67)
  and whose Luhn check digit holds (ISO/IEC 7812-1). A random 16-digit number passes 1 time in 10 on Luhn
  alone; a timestamp, an order number or an ISBN rarely has a card prefix too.
* **National identity numbers** (:data:`ID_KINDS`), the common shapes of the overview's languages, each with
  its own check where it has one: US Social Security numbers (``123-45-6789``, or 9 digits after "SSN"; the
  area, group and serial rules of the SSA), UK National Insurance numbers, Canadian SINs (after "SIN",
  Luhn), Spanish DNI/NIE (check letter), Italian codici fiscali (check letter), French NIR (key 97), German
  tax ids (after "Steuer-ID", ISO 7064 MOD 11,10), Portuguese NIF (after "NIF", mod 11), Brazilian CPF (two
  check digits), Chinese resident ids (birth date, ISO 7064 MOD 11-2), Japanese My Numbers (after
  "マイナンバー", check digit). A number that needs its name before it has no shape of its own to tell it.

The setting ``keep_identity_numbers`` keeps identity numbers in notes (cards are always redacted).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date

__all__ = ["ID_KINDS", "cards", "identity_numbers", "luhn"]

# Each pattern opens with the character class its match starts with (the boundary before it is checked just after):
# the regex engine then skips to candidates in C instead of trying every position.
_CARD = re.compile(r"\d(?<![\w.+/\-]\d)(?:[ \-]?\d){12,18}(?![\w/\-]|[.,]\d)")
_CARD_PREFIX = re.compile(r"4|5[0-8]|2(?:22[1-9]|2[3-9]|[3-6]|7[01]|720)|3[47]|3(?:0[0-5]|[689])|35(?:2[89]|[3-8]\d)|"
                          r"6(?:011|4[4-9]|5|2|3|7)")

ID_KINDS = ("us-ssn", "uk-nino", "ca-sin", "es-dni", "es-nie", "it-codice-fiscale", "fr-nir", "de-tax-id", "pt-nif",
            "br-cpf", "cn-resident-id", "jp-my-number")
_SSN = re.compile(r"\d(?<![\w\-]\d)\d\d([\- ])\d\d\1\d{4}(?![\w\-])")
_NAMED = (  # (kind, pattern with the number in group 1): numbers that need their name before them
    ("us-ssn", r"(?i)\b(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)\s*(?:#|no\.?|is|:|=)?\s*(\d{9})(?!\d)"),
    ("ca-sin", r"(?i)(?:\bSIN\b|social\s+insurance(?:\s+number)?|num[ée]ro\s+d['’]assurance\s+sociale|\bNAS\b)"
               r"\D{0,12}?(\d{3}[ \-]?\d{3}[ \-]?\d{3})(?!\d)"),
    ("de-tax-id", r"(?i)(?:steuer[\-\s]?id|steueridentifikationsnummer|identifikationsnummer|\bIdNr\b)"
                  r"\D{0,12}?(\d{2} ?\d{3} ?\d{3} ?\d{3})(?!\d)"),
    ("pt-nif", r"(?i)(?:\bNIF\b|n[úu]mero\s+de\s+contribuinte|\bcontribuinte\b)\D{0,12}?(\d{3} ?\d{3} ?\d{3})(?!\d)"),
    ("jp-my-number", r"(?i)(?:マイナンバー|個人番号|my\s*number)\D{0,8}?(\d{4}[ \-]?\d{4}[ \-]?\d{4})(?!\d)"),
)
_NAMED_RE = tuple((k, re.compile(p)) for k, p in _NAMED)
_TWO_DIGITS = re.compile(r"\d\d")
#: Where a named number's name may start (in the lower-cased text): its pattern is matched there only.
_NAMED_HINTS = {kind: re.compile(p) for kind, p in (
    ("us-ssn", r"ssn|social"), ("ca-sin", r"sin|social|num[ée]ro|nas"), ("de-tax-id", r"steuer|identifikationsnummer|idnr"),
    ("pt-nif", r"nif|n[úu]mero|contribuinte"), ("jp-my-number", r"マイナンバー|個人番号|my"))}
_NINO = re.compile(r"[A-CEGHJ-PR-TW-Z](?<![A-Za-z0-9][A-Z])[A-CEGHJ-NPR-TW-Z](?<!BG|GB|NK|KN|TN|NT|ZZ)"
                   r" ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])")
_DNI = re.compile(r"\d(?<![A-Za-z0-9]\d)\d{7}-?[A-HJ-NP-TV-Z](?![A-Za-z0-9])")
_NIE = re.compile(r"([XYZ])(?<![A-Za-z0-9][XYZ])-?(\d{7})-?([A-HJ-NP-TV-Z])(?![A-Za-z0-9])")
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"
_CF = re.compile(r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]{5}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z](?![A-Za-z0-9])")
_CF_ODD = (1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23)
_NIR = re.compile(r"([12])(?<![\w\-][12]) ?(\d{2}) ?(0[1-9]|1[0-2]|[2-9]\d) ?(\d{2}|2[AB]) ?(\d{3}) ?(\d{3}) ?(\d{2})"
                  r"(?![\w\-])")
_CPF = re.compile(r"\d(?<![\w.\-]\d)\d\d\.\d{3}\.\d{3}-\d{2}(?![\w\-]|\.\d)")
_CN = re.compile(r"[1-8](?<![0-9A-Za-z][1-8])\d{5}(19|20)\d{2}(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])\d{3}[0-9Xx]"
                 r"(?![0-9A-Za-z])")
_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def luhn(digits: str) -> bool:
    """Whether ``digits`` (a string of 0-9) ends with its Luhn check digit (ISO/IEC 7812-1)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = (ord(ch) - 48) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def cards(text: str) -> Iterator[tuple[str, int, int]]:
    """``(kind, start, end)`` of each payment card number in ``text``."""
    for m in _CARD.finditer(text):
        raw = m.group()
        seps = {c for c in raw if not c.isdigit()}
        if len(seps) > 1:
            continue
        sep = seps.pop() if seps else ""
        groups = raw.split(sep) if sep else [raw]
        for n in range(len(groups), 0, -1):      # "4111 1111 1111 1111 123": the card, less the code after it
            digits = "".join(groups[:n])
            if 13 <= len(digits) <= 19 and (not sep or _grouped([len(g) for g in groups[:n]])) \
                    and _CARD_PREFIX.match(digits) and luhn(digits) and len(set(digits)) > 1:
                yield "payment-card", m.start(), m.start() + len(sep.join(groups[:n]))
                break


def _grouped(sizes: list[int]) -> bool:
    """Whether the group sizes of a card number are a card's: fours (the last 1-4), or 4-6-5 / 4-6-4."""
    return (all(n == 4 for n in sizes[:-1]) and 1 <= sizes[-1] <= 4) or sizes in ([4, 6, 5], [4, 6, 4])


def _ssn_ok(area: str, group: str, serial: str) -> bool:
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _cf_ok(cf: str) -> bool:
    values = [int(c) if c.isdigit() else ord(c) - 65 for c in cf[:15]]
    total = sum(_CF_ODD[v] if i % 2 == 0 else v for i, v in enumerate(values))
    return chr(65 + total % 26) == cf[15]


def _nir_ok(groups: tuple[str, ...]) -> bool:
    dept = groups[3].replace("2A", "19").replace("2B", "18")
    number = int("".join(groups[:3]) + dept + groups[4] + groups[5])
    return 97 - number % 97 == int(groups[6])


def _cpf_ok(digits: str) -> bool:
    if len(set(digits)) == 1:
        return False
    d = [int(c) for c in digits]
    for size in (9, 10):
        if sum(v * (size + 1 - i) for i, v in enumerate(d[:size])) * 10 % 11 % 10 != d[size]:
            return False
    return True


def _cn_ok(number: str) -> bool:
    try:
        date(int(number[6:10]), int(number[10:12]), int(number[12:14]))
    except ValueError:
        return False
    check = "10X98765432"[sum(int(c) * w for c, w in zip(number[:17], _CN_WEIGHTS)) % 11]
    return number[17].upper() == check


def _mod11_10(digits: str) -> bool:
    """ISO 7064 MOD 11,10 (the German tax id's check digit)."""
    product = 10
    for ch in digits[:-1]:
        total = (int(ch) + product) % 10 or 10
        product = total * 2 % 11
    return (11 - product) % 10 == int(digits[-1])


def _nif_ok(digits: str) -> bool:
    total = sum(int(c) * (9 - i) for i, c in enumerate(digits[:8]))
    check = 11 - total % 11
    return (0 if check >= 10 else check) == int(digits[8])


def _my_number_ok(digits: str) -> bool:
    total = sum(int(digits[10 - i]) * (i + 2 if i <= 5 else i - 4) for i in range(11))
    check = 0 if total % 11 <= 1 else 11 - total % 11
    return check == int(digits[11])


_NAMED_CHECK = {"us-ssn": lambda d: _ssn_ok(d[:3], d[3:5], d[5:]), "ca-sin": lambda d: d[0] not in "08" and luhn(d),
                "de-tax-id": lambda d: d[0] != "0" and _mod11_10(d), "pt-nif": _nif_ok, "jp-my-number": _my_number_ok}


def identity_numbers(text: str) -> Iterator[tuple[str, int, int]]:
    """``(kind, start, end)`` of each national identity number in ``text`` (kinds: :data:`ID_KINDS`)."""
    if _TWO_DIGITS.search(text) is None:
        return
    for m in _SSN.finditer(text):
        number = m.group()
        if _ssn_ok(number[:3], number[4:6], number[7:]):
            yield "us-ssn", m.start(), m.end()
    low = text.lower()
    for kind, pattern in _NAMED_RE:
        for hit in _NAMED_HINTS[kind].finditer(low):       # each pattern opens with its name: matched there only
            m = pattern.match(text, hit.start())
            if m is not None and _NAMED_CHECK[kind]("".join(c for c in m.group(1) if c.isdigit())):
                yield kind, m.start(1), m.end(1)
    for m in _NINO.finditer(text):
        yield "uk-nino", m.start(), m.end()
    for m in _DNI.finditer(text):
        if _DNI_LETTERS[int(m.group()[:8]) % 23] == m.group()[-1]:
            yield "es-dni", m.start(), m.end()
    for m in _NIE.finditer(text):
        if _DNI_LETTERS[int(str("XYZ".index(m.group(1))) + m.group(2)) % 23] == m.group(3):
            yield "es-nie", m.start(), m.end()
    for m in _CF.finditer(text):
        if _cf_ok(m.group()):
            yield "it-codice-fiscale", m.start(), m.end()
    for m in _NIR.finditer(text):
        if _nir_ok(m.groups()):
            yield "fr-nir", m.start(), m.end()
    for m in _CPF.finditer(text):
        if _cpf_ok(m.group().replace(".", "").replace("-", "")):
            yield "br-cpf", m.start(), m.end()
    for m in _CN.finditer(text):
        if _cn_ok(m.group()):
            yield "cn-resident-id", m.start(), m.end()
