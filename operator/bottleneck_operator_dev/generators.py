"""Each scenario family's ``generate(seed, n, *, start)``, imported when first drawn and by name.

One function a family, each with its own import, so that the import contracts and the architecture
table see which families training may read (``worlds.py`` lists them by letter).
"""

from __future__ import annotations

from typing import Any


def family_b() -> Any:
    from bottleneck_operator_dev.scenarios import generate_family

    return generate_family


def family_c() -> Any:
    from bottleneck_operator_dev.blindfamily import generate_blind_family

    return generate_blind_family


def family_d() -> Any:
    from bottleneck_operator_dev.familyd import generate_family_d

    return generate_family_d


def family_e() -> Any:
    from bottleneck_operator_dev.familye import generate_family_e

    return generate_family_e


def family_f() -> Any:
    from bottleneck_operator_dev.familyf import generate_family_f

    return generate_family_f


def family_g() -> Any:
    from bottleneck_operator_dev.familyg import generate_family_g

    return generate_family_g


def family_h() -> Any:
    from bottleneck_operator_dev.familyh import generate_family_h

    return generate_family_h


def family_i() -> Any:
    from bottleneck_operator_dev.familyi import generate_family_i

    return generate_family_i


def family_j() -> Any:
    from bottleneck_operator_dev.familyj import generate_family_j

    return generate_family_j


def family_k() -> Any:
    from bottleneck_operator_dev.familyk import generate_family_k

    return generate_family_k


def family_l() -> Any:
    from bottleneck_operator_dev.familyl import generate_family_l

    return generate_family_l


def family_m() -> Any:
    from bottleneck_operator_dev.familym import generate_family_m

    return generate_family_m


def family_n() -> Any:
    from bottleneck_operator_dev.familyn import generate_family_n

    return generate_family_n


def family_o() -> Any:
    from bottleneck_operator_dev.familyo import generate_family_o

    return generate_family_o


def family_p() -> Any:
    from bottleneck_operator_dev.familyp import generate_family_p

    return generate_family_p


def family_q() -> Any:
    from bottleneck_operator_dev.familyq import generate_family_q

    return generate_family_q


def family_r() -> Any:
    from bottleneck_operator_dev.familyr import generate_family_r

    return generate_family_r


def family_s() -> Any:
    from bottleneck_operator_dev.familys import generate_family_s

    return generate_family_s


def family_t() -> Any:
    from bottleneck_operator_dev.familyt import generate_family_t

    return generate_family_t


def family_u() -> Any:
    from bottleneck_operator_dev.familyu import generate_family_u

    return generate_family_u


def family_v() -> Any:
    from bottleneck_operator_dev.familyv import generate_family_v

    return generate_family_v


def family_w() -> Any:
    from bottleneck_operator_dev.familyw import generate_family_w

    return generate_family_w


def family_x() -> Any:
    from bottleneck_operator_dev.familyx import generate_family_x

    return generate_family_x


def family_y() -> Any:
    from bottleneck_operator_dev.familyy import generate_family_y

    return generate_family_y


def family_z() -> Any:
    from bottleneck_operator_dev.familyz import generate_family_z

    return generate_family_z


def family_aa() -> Any:
    from bottleneck_operator_dev.familyaa import generate_family_aa

    return generate_family_aa


def family_ab() -> Any:
    from bottleneck_operator_dev.familyab import generate_family_ab

    return generate_family_ab


def family_ac() -> Any:
    from bottleneck_operator_dev.familyac import generate_family_ac

    return generate_family_ac


def family_ad() -> Any:
    from bottleneck_operator_dev.familyad import generate_family_ad

    return generate_family_ad


def family_ae() -> Any:
    from bottleneck_operator_dev.familyae import generate_family_ae

    return generate_family_ae


def family_af() -> Any:
    from bottleneck_operator_dev.familyaf import generate_family_af

    return generate_family_af


def family_ag() -> Any:
    from bottleneck_operator_dev.familyag import generate_family_ag

    return generate_family_ag


def family_ah() -> Any:
    from bottleneck_operator_dev.familyah import generate_family_ah

    return generate_family_ah


def family_ai() -> Any:
    from bottleneck_operator_dev.familyai import generate_family_ai

    return generate_family_ai


def family_aj() -> Any:
    from bottleneck_operator_dev.familyaj import generate_family_aj

    return generate_family_aj


def family_ak() -> Any:
    from bottleneck_operator_dev.familyak import generate_family_ak

    return generate_family_ak


def family_al() -> Any:
    from bottleneck_operator_dev.familyal import generate_family_al

    return generate_family_al


def family_am() -> Any:
    from bottleneck_operator_dev.familyam import generate_family_am

    return generate_family_am


def family_an() -> Any:
    from bottleneck_operator_dev.familyan import generate_family_an

    return generate_family_an
