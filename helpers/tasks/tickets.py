"""Synthetic customer-support tickets for Larkfield, a small online shop, routed to five teams.

Everything here is generated, nothing is downloaded. ``make_tickets(seed)`` uses only
``random.Random(seed)``, so the same seed gives the same tickets, byte for byte, on any
machine. Some tickets are "word order" tickets: the same words in another order belong to
another team ("damaged on arrival, not after use" is a return, "damaged after use, not on
arrival" a warranty claim). A model that ignores order can only guess on those.

The rest is the usual text pipeline, small enough to read: ``tokenize`` (lower case, words
and single punctuation marks), ``Vocab`` (token <-> id, ``<pad>`` = 0, ``<unk>`` = 1),
``token_ids`` (pad a batch at the end) and ``labels``.
"""

import csv
import io
import random
import re
from collections import Counter

import torch

TEAMS = ("delivery", "returns", "payment", "warranty", "account")
STYLES = ("short", "long", "polite", "angry", "typos")
PAD, UNK = 0, 1          # ids of "<pad>" and "<unk>"
MAX_TOKENS = 120         # longer tickets are cut: the position table has 120 rows

ELECTRIC = ("kettle", "desk lamp", "blender", "radio", "coffee grinder", "toaster", "lawn mower",
            "baby monitor", "air fryer", "hair dryer", "electric toothbrush", "standing fan")
PRODUCTS = ELECTRIC + ("trampoline", "garden chair", "rug", "backpack", "bike helmet", "tent",
                       "office chair", "bookshelf", "duvet", "water bottle", "paddling pool", "jigsaw")
NAMES = ("Anna", "Tom", "Priya", "Lukas", "Maria", "James", "Fatima", "Ben", "Chloe", "Omar",
         "Sofia", "Dan", "Hannah", "Ravi", "Ella", "Marek", "Grace", "Yusuf", "Nina", "Owen")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
RELATIVES = ("son", "daughter", "mum", "dad", "wife", "husband", "sister", "friend")

# What each team hears about, one sentence each. {product}, {order}, {days}... are filled in;
# {appliance} is the ticket's product too, but only an ELECTRIC one fits there.
ISSUES = {
    "delivery": (
        "My {product} has not arrived yet.",
        "The parcel with my {product} is {days} days late.",
        "Tracking has said out for delivery since {weekday}.",
        "The courier says it was delivered but there is nothing at my door.",
        "Can I change the delivery address? I typed the wrong street.",
        "I need to change the delivery slot for my {product}.",
        "The driver left my parcel with a neighbour I do not know.",
        "Where is my parcel? The tracking has not moved for {days} days.",
        "Delivery was promised for {weekday} and nothing came.",
        "The tracking number you sent me does not work.",
        "Only one of the two boxes arrived, the {product} is still missing.",
        "Could the courier leave the parcel in the shed next time?",
        "My parcel is late and I need the {product} for the weekend.",
        "Is it possible to get the {product} delivered on a Saturday?",
    ),
    "returns": (
        "I would like to return the {product}, it is too small.",
        "How do I get a return label for the {product}?",
        "I sent the {product} back {days} days ago and have not heard anything.",
        "You sent me the wrong colour. I ordered blue and got red.",
        "Wrong item in the box: I got a {other} instead of a {product}.",
        "I changed my mind about the {product}, can I send it back?",
        "The {product} came broken in a crushed box, I want to send it back.",
        "Can I exchange the {product} for a different colour?",
        "The return label in the parcel has the wrong address on it.",
        "I dropped the return at the post office on {weekday}, what happens now?",
        "The {product} does not look like the photo, I want to return it.",
        "Is the return free or do I pay for the postage?",
        "Two pieces of the {product} were missing from the box, please take it back.",
    ),
    "payment": (
        "I was charged twice for order {order}.",
        "My card was declined but the money still left my bank.",
        "The discount code {code} did not work at checkout.",
        "I need an invoice with my company name for order {order}.",
        "Why was I charged {amount} when the basket said {amount2}?",
        "Can I pay for the {product} in instalments?",
        "PayPal says the payment failed but you took the money.",
        "There is a charge of {amount} from Larkfield that I do not recognise.",
        "The gift card balance was not used when I paid.",
        "Please add the VAT number to my invoice.",
        "The price dropped the day after I paid, can I get the difference?",
        "My refund of {amount} is still not on my card statement.",
        "The checkout took my money twice and shows one order.",
    ),
    "warranty": (
        "My {appliance} stopped working after {months} months.",
        "The {product} broke after {weeks} weeks of normal use.",
        "Is the {product} still under warranty? I bought it last year.",
        "The motor of the {appliance} makes a loud grinding noise since last week.",
        "The {appliance} will not turn on any more, it is {months} months old.",
        "Can you repair the {product} or send me a spare part?",
        "A part of the {product} came off after a few weeks.",
        "The {appliance} smells of burning when I switch it on.",
        "I need a spare part for my {product}, the old one cracked.",
        "The {product} is falling apart after only {months} months.",
        "How long is the guarantee on the {product}?",
        "The switch on the {appliance} is faulty after {months} months of use.",
    ),
    "account": (
        "I cannot log in to my account.",
        "The password reset email never arrives.",
        "Please change the email address on my account to {email}.",
        "I want to delete my account and all my data.",
        "Please unsubscribe me from the newsletter.",
        "The login code is never sent to my phone.",
        "My account is locked after too many attempts.",
        "I have two accounts, can you merge them into one?",
        "My order history is empty since the new website.",
        "I want to change the name on my account, I got married.",
        "Someone else logged in to my account from another country.",
        "The app keeps logging me out every few minutes.",
    ),
}

# Telegraphic versions for the "short" style.
SHORT = {
    "delivery": ("parcel still not here", "need to change {product} delivery slot",
                 "where is my {product}", "tracking not updating", "wrong delivery address"),
    "returns": ("want to return the {product}", "return label please", "wrong size, send back",
                "sent it back, what now", "wrong item received"),
    "payment": ("charged twice", "card declined", "code {code} not working",
                "need invoice", "payment failed"),
    "warranty": ("{appliance} stopped working", "{product} broken after {weeks} weeks",
                 "warranty repair for {product}", "spare part needed", "{product} faulty"),
    "account": ("cant log in", "password reset not working", "delete my account",
                "change my email", "account locked"),
}

# Sentences any ticket may carry: they say nothing about the team (some mention its words).
DETAILS = (
    "I ordered it on {weekday} for my {relative}'s birthday.",
    "I have been a customer for {years} years.",
    "The order number is {order}.",
    "I already called once but nobody called back.",
    "I have attached a photo.",
    "My phone number is on the order.",
    "This is the second time this has happened.",
    "I paid by card, if that matters.",
    "The rest of the order was fine.",
    "I usually love your shop.",
    "I am at home every day after five.",
    "I checked my spam folder too.",
    "We are going on holiday on {weekday}, so I would like this sorted before then.",
    "I tried the chat on your website but it kept saying that all agents are busy.",
    "My neighbour ordered the same thing last month and had no problems at all.",
    "I would appreciate it if someone could look into this as soon as possible.",
    "To be honest I expected better, the reviews of your shop are very good.",
    "Please reply by email, I cannot take calls at work.",
    "I have kept all the packaging, just in case.",
    "It was meant to be a present for my {relative}.",
)

# Word-order tickets: two phrases of two teams in one sentence; the ticket goes to the team of
# {a}. Swapping {a} and {b} keeps every word and changes the team.
CONTRASTS = (  # (template, phrases of team A, phrases of team B)
    ("The {product} was damaged {a}, not {b}.",
     ("returns", ("on arrival", "in the box")), ("warranty", ("after use", "after {weeks} weeks"))),
    ("It broke {a}, not {b}, so please help.",
     ("returns", ("on arrival", "in the box")), ("warranty", ("after use", "after {weeks} weeks"))),
    ("I want {a}, not {b}.",
     ("returns", ("a refund", "my money back")), ("warranty", ("a repair", "a free repair"))),
    ("Please change my {a} address, not my {b} address.",
     ("delivery", ("delivery",)), ("account", ("account",))),
    ("This is about {a}, not about {b}.",
     ("delivery", ("the delivery", "the courier")), ("payment", ("the payment", "the invoice"))),
    ("The problem is {a}; {b} is fine.",
     ("payment", ("the payment", "my card")), ("account", ("my account", "the login"))),
    ("Not {b} but {a} needs fixing.",
     ("delivery", ("the tracking", "the delivery")), ("returns", ("the return", "the return label"))),
    ("Please sort out {a} first, {b} can wait.",
     ("warranty", ("the repair", "the warranty claim")), ("payment", ("the invoice", "the payment"))),
    ("I was told to write about {a} and not {b}.",
     ("account", ("my login", "my password")), ("delivery", ("my parcel", "the delivery"))),
)

GREETINGS = ("Hello,", "Hi,", "Good morning,", "Dear Larkfield team,", "Hi there,")
THANKS = ("Thank you in advance.", "Many thanks for your help.", "Thanks a lot.",
          "I look forward to your reply.")
SIGN_OFFS = ("Kind regards, {name}", "Best wishes, {name}", "Thanks, {name}", "{name}")
ANGRY_OPEN = ("This is unacceptable.", "I am really fed up.", "Seriously?!", "Third email now.",
              "What is going on with your shop?")
ANGRY_CLOSE = ("Fix this NOW.", "I want an answer today!!", "Worst service ever.",
               "If this is not sorted I will leave a review.", "Sort it out!!!")
SHORT_OPEN = ("", "", "Hi, ", "Ugh, ", "Help: ")


def fill(template, rng, ticket):
    """Fill the {slots} of a template: the ticket's own details, or random shop details."""
    slots = {
        "days": rng.randrange(2, 15), "weeks": rng.randrange(2, 12), "months": rng.randrange(2, 23),
        "years": rng.randrange(2, 11), "weekday": rng.choice(WEEKDAYS),
        "other": rng.choice([p for p in PRODUCTS if p != ticket["product"]]),
        "code": rng.choice(("SPRING10", "WELCOME5", "LARK20", "SUMMER15")),
        "amount": f"£{rng.randrange(10, 300)}.{rng.randrange(0, 100):02d}",
        "amount2": f"£{rng.randrange(10, 300)}.{rng.randrange(0, 100):02d}",
        "email": f"{ticket['name'].lower()}{rng.randrange(1, 99)}@example.com",
        "appliance": ticket["product"],
        **ticket,
    }
    return template.format(**{k: v for k, v in slots.items() if "{" + k + "}" in template})


def add_typos(text, rng, rate=0.15):
    """Swap, drop or double a letter in some words, as hurried typing does."""
    words = text.split(" ")
    for i, word in enumerate(words):
        if len(word) >= 4 and word.isalpha() and rng.random() < rate:
            j = rng.randrange(1, len(word) - 1)
            kind = rng.randrange(3)
            if kind == 0:
                word = word[:j] + word[j + 1] + word[j] + word[j + 2:]
            elif kind == 1:
                word = word[:j] + word[j + 1:]
            else:
                word = word[:j] + word[j] + word[j:]
            words[i] = word
    return " ".join(words)


def contrast(rng, ticket):
    """A word-order sentence and its team: the team of the phrase in slot {a}."""
    template, side_1, side_2 = rng.choice(CONTRASTS)
    (team_a, phrases_a), (_, phrases_b) = (side_1, side_2) if rng.random() < 0.5 else (side_2, side_1)
    text = template.replace("{a}", rng.choice(phrases_a)).replace("{b}", rng.choice(phrases_b))
    return fill(text, rng, ticket), team_a


def make_ticket(number, rng):
    """One ticket: a dict with ticket_id, order_id, team, style, kind and text."""
    style = rng.choice(STYLES)
    kind = "word order" if rng.random() < 0.25 else "plain"
    team = rng.choice(TEAMS)
    template = rng.choice(ISSUES[team])
    product = rng.choice(ELECTRIC if "{appliance}" in template else PRODUCTS)
    ticket = {"order": f"LK-{rng.randrange(100000, 1000000)}", "product": product,
              "relative": rng.choice(RELATIVES), "name": rng.choice(NAMES)}

    def fits(t):   # a template this ticket's product fits in
        return "{appliance}" not in t or product in ELECTRIC

    details = [fill(t, rng, ticket) for t in rng.sample(DETAILS, rng.randrange(3, 11))]
    if kind == "word order":
        core, team = contrast(rng, ticket)
    else:
        core = fill(template, rng, ticket)
        if rng.random() < 0.3:                                  # a second sentence on the issue
            details[0] = fill(rng.choice([t for t in ISSUES[team] if fits(t)]), rng, ticket)
    order, name = ticket["order"], ticket["name"]
    if style == "short":
        if kind == "plain":
            core = fill(rng.choice([t for t in SHORT[team] if fits(t)]), rng, ticket)
        parts = [rng.choice(SHORT_OPEN) + core.rstrip(".") + ".", f"Order {order}"]
    elif style == "polite":
        parts = [rng.choice(GREETINGS), core, *details[: rng.randrange(3)], rng.choice(THANKS),
                 rng.choice(SIGN_OFFS).format(name=name)]
    elif style == "angry":
        parts = [rng.choice(ANGRY_OPEN), f"Order {order}.", core, *details[: rng.randrange(2)],
                 rng.choice(ANGRY_CLOSE)]
    elif style == "long":
        parts = [rng.choice(GREETINGS), f"I am writing regarding order {order}.", *details[1:3],
                 core, details[0], *details[3:], rng.choice(THANKS),
                 rng.choice(SIGN_OFFS).format(name=name)]
    else:  # typos
        parts = [rng.choice(("hi", "hello", "")), core, *details[: rng.randrange(2)],
                 f"order {order}", rng.choice(("thx", "thanks", ""))]
    text = " ".join(p for p in parts if p)
    if style == "typos":
        text = add_typos(text, rng).lower() if rng.random() < 0.5 else add_typos(text, rng)
    return {"ticket_id": f"T-{number}", "order_id": order, "team": team, "style": style,
            "kind": kind, "text": text}


def make_tickets(seed=0, n_train=3200, n_valid=800, first_id=60001):
    """(train_rows, valid_rows): n_train + n_valid tickets; validation = the newest ones."""
    rng = random.Random(seed)
    rows = [make_ticket(first_id + i, rng) for i in range(n_train + n_valid)]
    return rows[:n_train], rows[n_train:]


def to_csv(rows):
    """The tickets as CSV text (fixed columns, "\\n" line ends): same seed, same bytes."""
    out = io.StringIO()
    writer = csv.DictWriter(out, ["ticket_id", "order_id", "team", "style", "kind", "text"],
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def tokenize(text):
    """Lower case; a token is a run of letters/digits or one other character (not a space)."""
    return re.findall(r"[a-z0-9]+|[^\sa-z0-9]", text.lower())


class Vocab:
    """Token <-> id. Ids 0 and 1 are <pad> and <unk>; then every token seen at least
    min_count times in the texts, in alphabetical order."""

    def __init__(self, texts, min_count=2):
        counts = Counter(token for text in texts for token in tokenize(text))
        self.itos = ["<pad>", "<unk>"] + sorted(t for t, c in counts.items() if c >= min_count)
        self.stoi = {token: i for i, token in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def encode(self, text):
        """Token ids of a text, cut to MAX_TOKENS; unknown tokens become UNK."""
        return [self.stoi.get(token, UNK) for token in tokenize(text)][:MAX_TOKENS]

    def decode(self, ids):
        return " ".join(self.itos[int(i)] for i in ids)


def token_ids(rows, vocab):
    """(batch, n) tensor of token ids, n = the longest ticket; shorter ones end in PAD."""
    encoded = [vocab.encode(row["text"]) for row in rows]
    n = max(len(ids) for ids in encoded)
    return torch.tensor([ids + [PAD] * (n - len(ids)) for ids in encoded])


def labels(rows):
    """(batch,) tensor of team numbers, in the order of TEAMS."""
    return torch.tensor([TEAMS.index(row["team"]) for row in rows])
