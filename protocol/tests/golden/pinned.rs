//! Pinned bytes: each representative frame encodes to exactly its golden hex and decodes
//! back.

use elementals_protocol::wire::{self, decode_client, decode_server};
use elementals_protocol::{ClientMsg, ErrorCode, Seat, ServerMsg};

use crate::session::{client_frame, server_frame, session};

/// `msg` encodes to exactly `pinned` (hex), which decodes back to `msg`.
fn assert_pinned_client(msg: &ClientMsg, pinned: &str) {
    assert_eq!(hex::encode(wire::encode(msg)), pinned, "{msg:?}");
    assert_eq!(
        decode_client(&hex::decode(pinned).unwrap()).as_ref(),
        Ok(msg)
    );
}

fn assert_pinned_server(msg: &ServerMsg, pinned: &str) {
    assert_eq!(hex::encode(wire::encode(msg)), pinned, "{msg:?}");
    assert_eq!(
        decode_server(&hex::decode(pinned).unwrap()).as_ref(),
        Ok(msg)
    );
}

#[test]
fn golden_client_frames() {
    let (frames, _) = session();
    assert_pinned_client(client_frame(&frames, "hello"), GOLDEN_HELLO);
    assert_pinned_client(client_frame(&frames, "login"), GOLDEN_LOGIN);
    assert_pinned_client(client_frame(&frames, "join_pool"), GOLDEN_JOIN_POOL);
    assert_pinned_client(client_frame(&frames, "commit"), GOLDEN_COMMIT);
    assert_pinned_client(client_frame(&frames, "reveal"), GOLDEN_REVEAL);
}

#[test]
fn golden_server_frames() {
    let (frames, resumed) = session();
    assert_pinned_server(server_frame(&frames, "welcome"), GOLDEN_WELCOME);
    assert_pinned_server(server_frame(&frames, "authenticated"), GOLDEN_AUTHENTICATED);
    assert_pinned_server(server_frame(&frames, "game_start"), GOLDEN_GAME_START);
    assert_pinned_server(server_frame(&frames, "round_result"), GOLDEN_ROUND_RESULT);
    assert_pinned_server(server_frame(&frames, "game_over"), GOLDEN_GAME_OVER);
    assert_pinned_server(server_frame(&frames, "rating_update"), GOLDEN_RATING_UPDATE);
    let error = ServerMsg::error(Some(4), ErrorCode::RevealMismatch, "no match");
    assert_pinned_server(&error, GOLDEN_ERROR);
    let error = ServerMsg::error(None, ErrorCode::BadMessage, "truncated MessagePack");
    assert_pinned_server(&error, GOLDEN_ERROR_NO_ID);
    let snapshot = ServerMsg::Snapshot {
        id: None,
        snapshot: resumed,
        seat: Some(Seat::One),
    };
    assert_pinned_server(&snapshot, GOLDEN_SNAPSHOT);
}

#[test]
fn an_authenticated_frame_without_game_id_reads_as_not_seated() {
    let (frames, _) = session();
    let old = hex::decode(GOLDEN_AUTHENTICATED_WITHOUT_GAME_ID).unwrap();
    assert_eq!(
        decode_server(&old).as_ref(),
        Ok(server_frame(&frames, "authenticated"))
    );
    assert!(matches!(
        decode_server(&old),
        Ok(ServerMsg::Authenticated { game_id: None, .. })
    ));
}

// Pinned once from the code, checked by eye: a map (0x8_), string keys (0xa_), `type` first.
const GOLDEN_HELLO: &str = concat!(
    "84a474797065a568656c6c6fa2696401b070726f746f636f6c5f76657273696f",
    "6e01a6636c69656e74b26578616d706c652d636c69656e742f312e30",
);
const GOLDEN_LOGIN: &str = concat!(
    "84a474797065a56c6f67696ea2696402a46e616d65a5616c696365a870617373",
    "776f7264b5636f727265637420686f7273652062617474657279",
);
const GOLDEN_JOIN_POOL: &str = concat!(
    "85a474797065a96a6f696e5f706f6f6ca2696403a776617269616e7483a66e75",
    "6d62657205a572616e676502a864697374616e636503ac74696d655f636f6e74",
    "726f6ca5626c69747aa57261746564c3",
);
const GOLDEN_COMMIT: &str = concat!(
    "85a474797065a6636f6d6d6974a2696404a767616d655f6964d9243666316332",
    "6234612d386433652d346635612d396237632d303132333435363738396162a5",
    "726f756e6401aa636f6d6d69746d656e74c420e5754c2678b6f9db8c12964471",
    "704a46260ad8ec0a64153b8bc4f2ec537eb42c",
);
const GOLDEN_REVEAL: &str = concat!(
    "86a474797065a672657665616ca2696405a767616d655f6964d9243666316332",
    "6234612d386433652d346635612d396237632d303132333435363738396162a5",
    "726f756e6401a47069636b05a56e6f6e6365c420111111111111111111111111",
    "1111111111111111111111111111111111111111",
);
const GOLDEN_WELCOME: &str = concat!(
    "85a474797065a777656c636f6d65a2696401b070726f746f636f6c5f76657273",
    "696f6e01a6736572766572b7656c656d656e74616c732d73657276657220302e",
    "312e30a66c696d69747386b16d61785f6d6573736167655f6279746573cd4000",
    "b26d61785f6d657373616765735f7065725f7314ac6865617274626561745f6d",
    "73cd4e20af69646c655f74696d656f75745f6d73cdea60aa6d61785f726f756e",
    "6473cd03e8af66697273745f636f6d6d69745f6d73cd7530",
);
const GOLDEN_AUTHENTICATED: &str = concat!(
    "86a474797065ad61757468656e74696361746564a2696402a76163636f756e74",
    "86a46e616d65a5616c696365a6726174696e67cb3ff4cccccccccccda5677565",
    "7374c2a477696e7304a66c6f7373657303a5647261777301a5746f6b656ed940",
    "3761336339653166376133633965316637613363396531663761336339653166",
    "3761336339653166376133633965316637613363396531663761336339653166",
    "b0746f6b656e5f657870697265735f6174cf0000019c115948f0a767616d655f",
    "6964c0",
);
// The same frame as a server sent it before `game_id` existed: a map of 5.
const GOLDEN_AUTHENTICATED_WITHOUT_GAME_ID: &str = concat!(
    "85a474797065ad61757468656e74696361746564a2696402a76163636f756e74",
    "86a46e616d65a5616c696365a6726174696e67cb3ff4cccccccccccda5677565",
    "7374c2a477696e7304a66c6f7373657303a5647261777301a5746f6b656ed940",
    "3761336339653166376133633965316637613363396531663761336339653166",
    "3761336339653166376133633965316637613363396531663761336339653166",
    "b0746f6b656e5f657870697265735f6174cf0000019c115948f0",
);
const GOLDEN_GAME_START: &str = concat!(
    "83a474797065aa67616d655f7374617274a467616d6586a767616d655f6964d9",
    "2436663163326234612d386433652d346635612d396237632d30313233343536",
    "3738396162a776617269616e7483a66e756d62657205a572616e676502a86469",
    "7374616e636503ac74696d655f636f6e74726f6c83aa696e697469616c5f6d73",
    "ce0002bf20ac696e6372656d656e745f6d73cd07d0a972657665616c5f6d73cd",
    "3a98a57261746564c3a7706c617965727382a36f6e6583a46e616d65a5616c69",
    "6365a6726174696e67cb3ff4cccccccccccda56775657374c2a374776f83a46e",
    "616d65a3626f62a6726174696e67cb3ff4cccccccccccda56775657374c2aa73",
    "7461727465645f6174cf0000019b76daa800a473656174a36f6e65",
);
const GOLDEN_ROUND_RESULT: &str = concat!(
    "85a474797065ac726f756e645f726573756c74a767616d655f6964d924366631",
    "63326234612d386433652d346635612d396237632d3031323334353637383961",
    "62a373657109a67265636f726484a5726f756e6401a57069636b7382a36f6e65",
    "05a374776f02a76f7574636f6d6582a677696e6e6572a374776fa56d6f766564",
    "84a7656c656d656e7402a26279a374776fa466726f6d00a2746fffa9706f7369",
    "74696f6e739500ff000000a6636c6f636b7383a66f6e655f6d73ce0002c240a6",
    "74776f5f6d73ce0002bf84a772756e6e696e6782a36f6e65c2a374776fc2",
);
const GOLDEN_GAME_OVER: &str = concat!(
    "86a474797065a967616d655f6f766572a767616d655f6964d924366631633262",
    "34612d386433652d346635612d396237632d303132333435363738396162a373",
    "657126a6726573756c7482a677696e6e6572a374776fa6726561736f6ea46564",
    "6765a57261746564c3a6636c6f636b7383a66f6e655f6d73ce00029040a67477",
    "6f5f6d73ce00025b84a772756e6e696e6782a36f6e65c2a374776fc2",
);
const GOLDEN_RATING_UPDATE: &str = concat!(
    "84a474797065ad726174696e675f757064617465a767616d655f6964d9243666",
    "3163326234612d386433652d346635612d396237632d30313233343536373839",
    "6162a373657127a7726174696e677382a36f6e6582a66265666f7265cb3ff4cc",
    "cccccccccda56166746572cb3ff0000000000000a374776f82a66265666f7265",
    "cb3ff4cccccccccccda56166746572cb3ffccccccccccccd",
);
const GOLDEN_ERROR: &str = concat!(
    "84a474797065a56572726f72a2696404a4636f6465af72657665616c5f6d6973",
    "6d61746368a76d657373616765a86e6f206d61746368",
);
const GOLDEN_ERROR_NO_ID: &str = concat!(
    "84a474797065a56572726f72a26964c0a4636f6465ab6261645f6d6573736167",
    "65a76d657373616765b57472756e6361746564204d6573736167655061636b",
);
const GOLDEN_SNAPSHOT: &str = concat!(
    "84a474797065a8736e617073686f74a26964c0a8736e617073686f748da46761",
    "6d6586a767616d655f6964d92436663163326234612d386433652d346635612d",
    "396237632d303132333435363738396162a776617269616e7483a66e756d6265",
    "7205a572616e676502a864697374616e636503ac74696d655f636f6e74726f6c",
    "83aa696e697469616c5f6d73ce0002bf20ac696e6372656d656e745f6d73cd07",
    "d0a972657665616c5f6d73cd3a98a57261746564c3a7706c617965727382a36f",
    "6e6583a46e616d65a5616c696365a6726174696e67cb3ff4cccccccccccda567",
    "75657374c2a374776f83a46e616d65a3626f62a6726174696e67cb3ff4cccccc",
    "cccccda56775657374c2aa737461727465645f6174cf0000019b76daa800a373",
    "657111a5726f756e6403a57068617365a6636f6d6d6974a9636f6d6d69747465",
    "6482a36f6e65c2a374776fc2a872657665616c656482a36f6e65c2a374776fc2",
    "a9706f736974696f6e739500fe000000a6636c6f636b7383a66f6e655f6d73ce",
    "0002b5c0a674776f5f6d73ce0002a684a772756e6e696e6782a36f6e65c3a374",
    "776fc3a6726f756e64739284a5726f756e6401a57069636b7382a36f6e6505a3",
    "74776f02a76f7574636f6d6582a677696e6e6572a374776fa56d6f76656484a7",
    "656c656d656e7402a26279a374776fa466726f6d00a2746fffa9706f73697469",
    "6f6e739500ff00000084a5726f756e6402a57069636b7382a36f6e6501a37477",
    "6f02a76f7574636f6d6582a677696e6e6572a374776fa56d6f76656484a7656c",
    "656d656e7402a26279a374776fa466726f6dffa2746ffea9706f736974696f6e",
    "739500fe000000a9636f6e6e656374656482a36f6e65c3a374776fc3aa737065",
    "637461746f727300aa647261775f6f66666572c0a6726573756c74c0a4736561",
    "74a36f6e65",
);
