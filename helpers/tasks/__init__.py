"""The course's small worlds: each task a notebook trains or measures a model on, with its data.

- ``reversal``: reverse a sequence of letters (notebooks 04, 05, 08);
- ``tickets`` and ``classifier``: support tickets routed to a team (notebook 07);
- ``numbers``: English number words into French (notebooks 09, 10);
- ``ablation``: notebook 05's Table 3, one change to the tiny model per row;
- ``tatoeba``: real English sentences into French (notebook 11).

``data/`` holds their data, ``checkpoints/`` their shipped models. A task imports the paper's
concepts (``helpers.model``, ``helpers.recipe``, ...); no concept imports a task.
"""
