"""The protocol's messages as typed dictionaries: those of `schema.py` (generated from the
JSON Schema the server's Rust types derive, protocol/schema/messages.json) under the short
names the SDK uses, and the few narrower types the schema states as plain strings.

Frames decode to plain ``dict`` values; these types only tell a type checker which keys a
message has. A server may add fields (PROTOCOL.md section 2, forward compatibility), so
code reading a message should not assume these are all of its keys.
"""

from __future__ import annotations

from typing import Literal

from .schema import (
    Account,
    AuthenticatedMsg,
    Challenge,
    ClientMsg,
    Clocks,
    CountsMsg,
    EndReason,
    ErrorCode,
    ErrorMsg,
    GameId,
    GameInfo,
    GameOverMsg,
    GameResult,
    GameSnapshot,
    GameStartMsg,
    Limits,
    LiveGame,
    Move,
    MyGame,
    NoticeMsg,
    OkMsg,
    Outcome,
    Owed,
    Phase,
    PlayerInfo,
    PongMsg,
    PoolCount,
    QueuedMsg,
    RatingChange,
    RematchDeclinedMsg,
    RematchOfferedMsg,
    RatingUpdateMsg,
    RoundRecord,
    Seat,
    SeatPair_of_boolean,
    SeatPair_of_RatingChange,
    Seek,
    ServerMsg,
    SnapshotMsg,
    TimeControl,
    Variant,
    WelcomeMsg,
    YourMoveMsg,
)

# The schema states these as strings; the values PROTOCOL.md section 11 and 6 allow.
Preset = Literal["blitz", "rapid", "live", "corr-1d", "corr-3d", "corr-7d"]
Strength = Literal["easy", "medium", "hard"]

SeatPairBool = SeatPair_of_boolean
SeatPairRating = SeatPair_of_RatingChange
Welcome = WelcomeMsg
Authenticated = AuthenticatedMsg
Queued = QueuedMsg
Counts = CountsMsg
Snapshot = SnapshotMsg
Ok = OkMsg
Pong = PongMsg
Error = ErrorMsg
GameStart = GameStartMsg
YourMove = YourMoveMsg
Notice = NoticeMsg
RematchOffered = RematchOfferedMsg
RematchDeclined = RematchDeclinedMsg
GameOver = GameOverMsg
RatingUpdate = RatingUpdateMsg

# Numbered game events: each has `game_id` and `seq` (PROTOCOL.md section 4).
GAME_EVENTS = frozenset(
    {
        "round_start",
        "committed",
        "reveal_phase",
        "revealed",
        "round_result",
        "draw_offered",
        "draw_declined",
        "presence",
        "game_over",
        "rating_update",
    }
)

__all__ = [
    "GAME_EVENTS",
    "Account",
    "Authenticated",
    "Challenge",
    "ClientMsg",
    "Clocks",
    "Counts",
    "EndReason",
    "Error",
    "ErrorCode",
    "GameId",
    "GameInfo",
    "GameOver",
    "GameResult",
    "GameSnapshot",
    "GameStart",
    "Limits",
    "LiveGame",
    "Move",
    "MyGame",
    "Notice",
    "Ok",
    "Outcome",
    "Owed",
    "Phase",
    "PlayerInfo",
    "Pong",
    "PoolCount",
    "Preset",
    "Queued",
    "RatingChange",
    "RatingUpdate",
    "RematchDeclined",
    "RematchOffered",
    "RoundRecord",
    "Seat",
    "SeatPairBool",
    "SeatPairRating",
    "Seek",
    "ServerMsg",
    "Snapshot",
    "Strength",
    "TimeControl",
    "Variant",
    "Welcome",
    "YourMove",
]
