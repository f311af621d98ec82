"""Built-in South African first names and surnames for simulated members.

Small, mixed lists (Nguni, Sotho, Afrikaans, English, Indian South African, Cape) so a
generated registry reads like a real Gauteng loyalty base. Immutable tuples only.
"""

from __future__ import annotations

import random
from typing import Final

FIRST_NAMES: Final = (
    "Thabo", "Sipho", "Lerato", "Nomvula", "Mpho", "Kagiso", "Lindiwe", "Themba",
    "Bongani", "Naledi", "Ayanda", "Zanele", "Palesa", "Tshepo", "Refilwe", "Sibusiso",
    "Nokuthula", "Lwazi", "Thandeka", "Mandla", "Busisiwe", "Katlego", "Dineo", "Tumelo",
    "Johan", "Pieter", "Annelie", "Marietjie", "Francois", "Elna", "Hendrik", "Riaan",
    "Charlene", "Wayne", "Candice", "Bradley", "Michelle", "Craig", "Nicole", "Gareth",
    "Priya", "Ravi", "Fatima", "Yusuf", "Kavitha", "Nirvana", "Ashwin", "Zainab",
    "Shaun", "Chantal", "Ebrahim", "Lauren", "Neo", "Karabo", "Precious", "Lucky",
)  # fmt: skip

LAST_NAMES: Final = (
    "Nkosi", "Dlamini", "Mokoena", "Khumalo", "Ndlovu", "Mahlangu", "Sithole", "Molefe",
    "Mthembu", "Zulu", "Mabaso", "Radebe", "Maseko", "Ngcobo", "Buthelezi", "Shabalala",
    "Mofokeng", "Nhlapo", "Tshabalala", "Modise", "Masilela", "Hlongwane", "Cele", "Baloyi",
    "van der Merwe", "Botha", "Pretorius", "Coetzee", "du Plessis", "Venter", "Nel",
    "Steyn", "Fourie", "Kruger", "Smith", "Jacobs", "Petersen", "Williams", "Adams",
    "Naidoo", "Pillay", "Govender", "Chetty", "Reddy", "Moodley", "Patel", "Moosa",
)  # fmt: skip


def random_name(rng: random.Random) -> str:
    """A plausible full name, e.g. "Lerato Mokoena"."""
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
