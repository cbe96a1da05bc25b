"""Reading a text file's bytes as text: UTF-8, or the encoding it really has, or a clear refusal.

Introduced in notebook 01 (chunking). `decode_text(data)` is what `lessons.ingest` applies to every
.txt, .md, .csv and .html file:

- UTF-8 (with or without a byte-order mark) is read as it is;
- UTF-16/UTF-32 with a byte-order mark, and UTF-16 without one (ASCII-heavy text, every other byte
  NUL), are decoded and the encoding is reported;
- anything else goes to charset-normalizer, which tells GB18030/GBK, Big5, Shift-JIS, EUC-KR,
  Latin-1/Windows-1252 and the other single-byte code pages apart by how plausible the decoded text
  is; the file is decoded with what it finds, and the encoding is reported (`DecodedText.encoding`);
- bytes that are no text at all (NUL bytes that are not UTF-16, many control characters) raise
  `BinaryData`; bytes no encoding explains raise `UnknownEncoding`, which names the best guess;
- UTF-8 that is *mojibake* — text once decoded with the wrong code page (GBK read as Windows-1252:
  "ÄãºÃ" for "你好"), then saved as UTF-8 — raises `Mojibake`, naming the encoding the original bytes
  really had, so the fix is to convert the original file again with that encoding.

The error messages never suggest a codec that was not detected.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

UTF8 = "utf-8"
CONTROL_SHARE_FOR_BINARY = 0.01  # above 1% control characters (other than tab, line ends, form feed) → binary
UTF16_NUL_SHARE = 0.3  # share of NULs at even (BE) or odd (LE) offsets that marks BOM-less UTF-16
MOJIBAKE_MIN_CHARS = 6  # a mojibake verdict needs at least this many Latin-1-looking characters…
MOJIBAKE_SHARE = 0.2  # …making up at least this share of the non-space characters
WESTERN_ACCENTED_SHARE = 0.3  # Windows-1252 text: at most this share of its letters above ASCII
WESTERN_PUNCTUATION = frozenset("\u00a0’‘“”„–—…€£¥¢°©®™«»·•¡¿§¶±×÷µ†‡‰")
CJK_ENCODINGS = frozenset(
    {
        "gb18030",
        "gbk",
        "gb2312",
        "hz",
        "big5",
        "big5hkscs",
        "cp950",
        "shift_jis",
        "cp932",
        "shift_jisx0213",
        "shift_jis_2004",
        "euc_jp",
        "euc_jis_2004",
        "euc_jisx0213",
        "iso2022_jp",
        "euc_kr",
        "cp949",
        "johab",
    }
)
LANGUAGE_OF_ENCODING = {
    "gb18030": "Chinese (simplified)",
    "gbk": "Chinese (simplified)",
    "gb2312": "Chinese (simplified)",
    "big5": "Chinese (traditional)",
    "big5hkscs": "Chinese (traditional)",
    "cp950": "Chinese (traditional)",
    "shift_jis": "Japanese",
    "cp932": "Japanese",
    "euc_jp": "Japanese",
    "euc_kr": "Korean",
    "cp949": "Korean",
}
_BOMS = (  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_ALLOWED_CONTROLS = frozenset("\t\n\r\f\v")


class EncodingProblem(ValueError):
    """Bytes that cannot be read as text; the message says why (the caller adds the file name and the fix)."""


class BinaryData(EncodingProblem):
    """The bytes are not text at all: NUL bytes (and not UTF-16), or many control characters."""


class UnknownEncoding(EncodingProblem):
    """Not UTF-8, and no encoding makes plausible text of the bytes; `guess` is the closest, if any."""

    def __init__(self, message: str, guess: str | None, offset: int, byte: int):
        super().__init__(message)
        self.guess, self.offset, self.byte = guess, offset, byte


class Mojibake(EncodingProblem):
    """Valid UTF-8 whose text was decoded with the wrong code page once; `original` is the real encoding."""

    def __init__(self, message: str, wrong: str, original: str):
        super().__init__(message)
        self.wrong, self.original = wrong, original


@dataclass(frozen=True)
class DecodedText:
    """A file's text and the encoding it was read with (`utf-8` unless detected otherwise)."""

    text: str
    encoding: str

    @property
    def detected(self) -> bool:
        """True when the file was not UTF-8 and its encoding was detected (worth telling the user)."""
        return self.encoding not in (UTF8, "utf-8-sig")


def decode_text(data: bytes) -> DecodedText:
    """The text of some bytes and its encoding; raises `BinaryData`, `UnknownEncoding` or `Mojibake`.

    Introduced in notebook 01 (chunking).
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError as error:
                raise UnknownEncoding(f"it starts with a {encoding.upper()} byte-order mark but is not valid "
                                      f"{encoding.upper()} (byte offset {error.start})", encoding, error.start,
                                      data[error.start])  # fmt: skip
            _check_controls(text)
            if encoding == "utf-8-sig":
                _check_mojibake(text)
                return DecodedText(text, UTF8)
            return DecodedText(text, encoding)
    if b"\x00" in data:
        return _nul_bytes(data)
    try:
        text = data.decode(UTF8)
    except UnicodeDecodeError as error:
        return _detected(data, error)
    _check_controls(text)
    _check_mojibake(text)
    return DecodedText(text, UTF8)


def encoding_label(encoding: str) -> str:
    """An encoding's name as people and `iconv` write it ("gb18030" → "GB18030", "utf_16_le" → "UTF-16LE")."""
    name = codecs.lookup(encoding).name if _known(encoding) else encoding
    special = {"cp1252": "WINDOWS-1252", "cp1250": "WINDOWS-1250", "cp1251": "WINDOWS-1251", "cp932": "CP932",
               "cp949": "CP949", "cp950": "CP950", "utf-16-le": "UTF-16LE", "utf-16-be": "UTF-16BE",
               "iso8859-1": "ISO-8859-1", "latin-1": "ISO-8859-1", "shift_jis": "SHIFT_JIS", "euc_jp": "EUC-JP",
               "euc_kr": "EUC-KR", "mac-roman": "MACINTOSH"}  # fmt: skip
    if name in special:
        return special[name]
    if name.startswith("iso8859-"):
        return "ISO-8859-" + name.split("-")[1]
    return name.upper().replace("_", "-")


def _known(encoding: str) -> bool:
    try:
        codecs.lookup(encoding)
    except LookupError:
        return False
    return True


def _check_controls(text: str) -> None:
    """Raise `BinaryData` when more than 1% of the characters are control characters."""
    if not text:
        return
    controls = sum(1 for char in text if (ord(char) < 32 or ord(char) == 127) and char not in _ALLOWED_CONTROLS)
    if controls and controls / len(text) > CONTROL_SHARE_FOR_BINARY:
        raise BinaryData(
            f"{controls} of its {len(text)} characters are control characters: it is binary data, not text"
        )


def _nul_bytes(data: bytes) -> DecodedText:
    """UTF-16 without a byte-order mark (decoded), or `BinaryData`."""
    pairs = max(len(data) // 2, 1)
    even_nuls = data[0::2].count(0) / pairs
    odd_nuls = data[1::2].count(0) / pairs
    for share, other, encoding in ((odd_nuls, even_nuls, "utf-16-le"), (even_nuls, odd_nuls, "utf-16-be")):
        if share >= UTF16_NUL_SHARE and other < 0.05 and len(data) % 2 == 0:
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError:
                break
            try:
                _check_controls(text)
            except BinaryData:
                break
            return DecodedText(text, encoding)
    raise BinaryData(f"it contains {data.count(0)} NUL bytes (and is not UTF-16 text): it is binary data, not text")


def _western(data: bytes) -> str | None:
    """The text of Windows-1252 (Latin-1) bytes of a Western language, or None when they are not that.

    charset-normalizer is unreliable on short Western text ("café au lait" comes out as CP1006, a
    longer French paragraph as WINDOWS-1250 with "trčs" for "très"), so this is checked first: every
    byte above 0x7F must decode to a letter or common punctuation, and such letters must be a minority
    of the letters (Russian in Windows-1251 also decodes to Latin-1 letters, but all of them).
    """
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    accented = [char for char in text if ord(char) > 127]
    if not accented or not all(char.isalpha() or char in WESTERN_PUNCTUATION for char in accented):
        return None
    letters = sum(char.isalpha() for char in text)
    if sum(char.isalpha() for char in accented) > WESTERN_ACCENTED_SHARE * letters:
        return None
    return text


def _detected(data: bytes, error: UnicodeDecodeError) -> DecodedText:
    """Bytes that are not UTF-8, decoded with the encoding charset-normalizer finds; or `UnknownEncoding`."""
    from charset_normalizer import from_bytes

    western = _western(data)
    if western is not None:
        _check_controls(western)
        return DecodedText(western, "cp1252")
    best = from_bytes(data).best()
    if best is None:
        raise UnknownEncoding(
            f"it is not valid UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start}), and no known "
            "encoding makes readable text of it", None, error.start, data[error.start],
        )  # fmt: skip
    text = str(best)
    try:
        _check_controls(text)
    except BinaryData:
        raise BinaryData(f"it is not UTF-8, and read as {encoding_label(best.encoding)} (the closest encoding) it "
                         "is mostly control characters: it is binary data, not text") from None  # fmt: skip
    return DecodedText(text, best.encoding)


def _latin1_looking(char: str) -> bool:
    """A character that a Windows-1252/Latin-1 decoder produces from a byte of 0x80–0xFF."""
    code = ord(char)
    if 0x80 <= code <= 0xFF:
        return True
    if code > 0xFF:
        try:
            char.encode("cp1252")
        except UnicodeEncodeError:
            return False
        return True
    return False


def _as_cp1252_bytes(text: str) -> bytes | None:
    """The bytes a Windows-1252 (Latin-1 for its undefined bytes) decoder would have read `text` from."""
    out = bytearray()
    for char in text:
        code = ord(char)
        if code <= 0xFF:
            out.append(code)
            continue
        try:
            out += char.encode("cp1252")
        except UnicodeEncodeError:
            return None
    return bytes(out)


def _check_mojibake(text: str) -> None:
    """Raise `Mojibake` when `text` reads like UTF-8 or CJK bytes once decoded as Windows-1252."""
    looking = sum(1 for char in text if _latin1_looking(char))
    non_space = sum(1 for char in text if not char.isspace())
    if looking < MOJIBAKE_MIN_CHARS or looking / max(non_space, 1) < MOJIBAKE_SHARE:
        return
    if any(ord(char) > 0xFF and not _latin1_looking(char) for char in text):
        return  # real characters beyond Latin-1 (Chinese, Cyrillic, …) sit beside them: not one wrong decoding
    raw = _as_cp1252_bytes(text)
    if raw is None:
        return
    original = None
    try:
        raw.decode(UTF8)
        original = UTF8
    except UnicodeDecodeError:
        from charset_normalizer import from_bytes

        best = from_bytes(raw).best()
        if best is not None and best.encoding in CJK_ENCODINGS:
            original = best.encoding
    if original is not None:
        raise Mojibake(
            f"its text is garbled (mojibake): it was decoded once with the wrong code page (WINDOWS-1252) and saved; "
            f"the original bytes were {encoding_label(original)}", "cp1252", original,
        )  # fmt: skip
