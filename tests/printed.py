"""What a check cell shows: the one line a checker prints (asserting it is one line)."""


def printed(capsys, check, *args, **kwargs):
    check(*args, **kwargs)
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out
    return out.strip()
