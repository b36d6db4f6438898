"""Protobuf varints, the one piece of the wire format both the fake relay (routing
and logging) and the harness (frames by hand) need."""


def enc_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def dec_varint(buf, i):
    """(value, index after it) of the varint at buf[i]; ValueError if truncated or
    longer than 64 bits."""
    v = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i
