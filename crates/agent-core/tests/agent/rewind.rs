//! `/rewind`: the conversation cut back to before a request, the files
//! restored from the checkpoints, and a resumed session going on from there.

use std::collections::BTreeMap;
use std::path::Path;

use agent_base::cancel::CancelToken;
use agent_policy::Mode;

use crate::scripted::{ask, finish, repo, start};

/// Every file of the workspace (but `.git`) and its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn call(tool: &str, args: serde_json::Value) -> String {
    serde_json::json!({"thought": "t", "tool": tool, "args": args}).to_string()
}

#[test]
fn rewind_cuts_the_conversation_restores_the_files_and_a_resume_goes_on_from_there() {
    let dir = repo();
    let turns = [
        // Request 1: a new file.
        call(
            "write_file",
            serde_json::json!({"path": "one.txt", "content": "1\n"}),
        ),
        finish("wrote one.txt"),
        // Request 2: an edit, a new file in a new folder, a deletion.
        call("read_file", serde_json::json!({"path": "src/calc.py"})),
        call(
            "edit",
            serde_json::json!({"path": "src/calc.py", "old_text": "return a - b", "new_text": "return b - a"}),
        ),
        call(
            "write_file",
            serde_json::json!({"path": "deep/new/two.txt", "content": "2\n"}),
        ),
        call("read_file", serde_json::json!({"path": "notes.txt"})),
        call(
            "apply_patch",
            serde_json::json!({"patch": "*** Begin Patch\n*** Delete File: notes.txt\n*** End Patch"}),
        ),
        finish("edited, wrote and deleted"),
        // Request 3: the same file again.
        call(
            "write_file",
            serde_json::json!({"path": "one.txt", "content": "3\n"}),
        ),
        finish("rewrote one.txt"),
        // After the rewind.
        finish("after the rewind"),
    ];
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let (mut agent, model) = start(dir.path(), Mode::Yolo, &turns, None, |_| {});
    ask(&mut agent, "Create one.txt with 1").unwrap();
    let before_two = tree(dir.path());
    ask(
        &mut agent,
        "Change sub in src/calc.py, add two.txt, delete notes.txt",
    )
    .unwrap();
    ask(&mut agent, "Create one.txt with 3").unwrap();
    assert_ne!(tree(dir.path()), before_two);

    let listed = agent.user_turns();
    let changes: Vec<usize> = listed.iter().map(|t| t.file_changes).collect();
    assert_eq!(changes, [1, 3, 1], "{listed:?}");
    assert_eq!(
        listed[1].request,
        "Change sub in src/calc.py, add two.txt, delete notes.txt"
    );

    // Bad numbers lose nothing.
    let cancel = CancelToken::new();
    assert!(agent.rewind(0, true, &cancel).is_err());
    let err = agent.rewind(9, true, &cancel).unwrap_err().to_string();
    assert!(
        err.contains("no request 9") && err.contains("1 to 3"),
        "{err}"
    );
    assert_eq!(agent.user_turns().len(), 3);

    let rewound = agent.rewind(2, true, &cancel).unwrap();
    assert_eq!(rewound.requests_dropped, 2);
    assert!(rewound.notes.is_empty(), "{:?}", rewound.notes);
    assert_eq!(
        tree(dir.path()),
        before_two,
        "the tree is byte-equal to before request 2"
    );
    assert!(
        !dir.path().join("deep").exists(),
        "the folder the agent made is gone"
    );
    assert_eq!(agent.exchanges().len(), 1);

    // The model's next prompt holds request 1 only.
    ask(&mut agent, "What now?").unwrap();
    let next = model.requests().last().unwrap().messages.clone();
    let text: Vec<&str> = next.iter().map(|m| m.content.as_str()).collect();
    let all = text.join("\n");
    assert!(all.contains("Create one.txt with 1"), "{all}");
    assert!(
        !all.contains("Change sub") && !all.contains("Create one.txt with 3"),
        "{all}"
    );
    assert!(text.last().unwrap().contains("What now?"));

    // A resumed session has the same conversation.
    let session = agent.session_id().to_string();
    drop(agent);
    let (resumed, _) = start(dir.path(), Mode::Yolo, &[], None, |c| {
        c.resume = Some(session)
    });
    let requests: Vec<String> = resumed.exchanges().into_iter().map(|e| e.0).collect();
    assert_eq!(requests, ["Create one.txt with 1", "What now?"]);
}

#[test]
fn rewinding_to_the_first_request_keeps_the_session_and_its_context() {
    let dir = repo();
    let turns = [
        call(
            "write_file",
            serde_json::json!({"path": "one.txt", "content": "1\n"}),
        ),
        finish("wrote one.txt"),
        finish("hello again"),
    ];
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let (mut agent, model) = start(dir.path(), Mode::Yolo, &turns, None, |_| {});
    let before = tree(dir.path());
    ask(&mut agent, "Create one.txt with 1").unwrap();
    let session = agent.session_id().to_string();
    // Without --files the files stay.
    let rewound = agent.rewind(1, false, &CancelToken::new()).unwrap();
    assert!(!rewound.files);
    assert!(dir.path().join("one.txt").exists());
    assert!(agent.user_turns().is_empty());
    ask(&mut agent, "hello").unwrap();
    assert_eq!(agent.session_id(), session, "the same session goes on");
    let next = model.requests().last().unwrap().messages.clone();
    assert_eq!(next.len(), 2, "the system prompt and the request");
    assert!(next[1].content.contains("<context>"), "{}", next[1].content);
    assert!(!next[1].content.contains("one.txt with 1"));
    // Rewinding the files now takes back nothing: the change belongs to
    // a request no longer in the conversation, made before this one.
    let rewound = agent.rewind(1, true, &CancelToken::new()).unwrap();
    assert!(rewound.files_restored.is_empty());
    assert_ne!(tree(dir.path()), before);
}

#[test]
fn a_file_changed_since_the_agent_wrote_it_is_restored_and_named_as_undo_does() {
    let dir = repo();
    let turns = [
        call(
            "write_file",
            serde_json::json!({"path": "one.txt", "content": "1\n"}),
        ),
        finish("wrote one.txt"),
    ];
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let (mut agent, _) = start(dir.path(), Mode::Yolo, &turns, None, |_| {});
    let before = tree(dir.path());
    ask(&mut agent, "Create one.txt with 1").unwrap();
    std::fs::write(dir.path().join("one.txt"), "1, and the user's line\n").unwrap();
    let rewound = agent.rewind(1, true, &CancelToken::new()).unwrap();
    assert_eq!(rewound.files_restored, ["one.txt"]);
    let notes = rewound.notes.join("\n");
    assert!(
        notes.contains("one.txt had changed after that change"),
        "{notes}"
    );
    assert_eq!(tree(dir.path()), before);
}
