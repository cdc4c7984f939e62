//! `strands teams package` through the real binary: the zip Teams takes
//! holds exactly the manifest and the two icons at its root, the manifest
//! names the app ID given (or TEAMS_APP_ID), and without an app ID
//! nothing is written.

use std::io::Read as _;

use serde_json::Value;

use crate::common::Sandbox;

const APP: &str = "0f4e6c1a-3b2d-4c5e-8f70-112233445566";

/// The zip's files, by name, in their order.
fn unzip(path: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(path).expect("the zip was written");
    let mut zip = zip::ZipArchive::new(file).expect("a zip");
    (0..zip.len())
        .map(|i| {
            let mut f = zip.by_index(i).expect("an entry");
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes).expect("readable");
            (f.name().expect("a UTF-8 name").to_string(), bytes)
        })
        .collect()
}

/// A PNG's width, height and colour type, from its IHDR.
fn png_header(png: &[u8]) -> (u32, u32, u8) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG signature");
    assert_eq!(&png[12..16], b"IHDR");
    let be = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    (be(16), be(20), png[25])
}

#[test]
fn teams_package_writes_the_manifest_and_icons() {
    let sb = Sandbox::new();
    let out = sb.path().join("app.zip");
    let run = sb.strands_env(
        &[("TEAMS_APP_ID", "")],
        &[
            "teams",
            "package",
            "--app-id",
            APP,
            "--out",
            out.to_str().expect("utf-8"),
            "--host",
            "strands.example.com",
        ],
    );
    run.expect_code(0);
    assert!(run.stdout.contains("app.zip"), "{}", run.stdout);

    let files = unzip(&out);
    let names: Vec<_> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["manifest.json", "color.png", "outline.png"]);
    let file = |name: &str| &files.iter().find(|(n, _)| n == name).expect(name).1;

    let manifest: Value = serde_json::from_slice(file("manifest.json")).expect("JSON");
    assert_eq!(manifest["id"], APP);
    assert_eq!(manifest["bots"][0]["botId"], APP);
    assert_eq!(manifest["manifestVersion"], "1.20");
    assert_eq!(
        manifest["$schema"],
        "https://developer.microsoft.com/json-schemas/teams/v1.20/MicrosoftTeams.schema.json"
    );
    assert_eq!(
        manifest["bots"][0]["scopes"],
        serde_json::json!(["personal", "team", "groupChat"])
    );
    assert_eq!(manifest["icons"]["color"], "color.png");
    assert_eq!(manifest["icons"]["outline"], "outline.png");
    assert!(manifest["validDomains"]
        .as_array()
        .expect("validDomains")
        .contains(&Value::from("strands.example.com")));
    assert!(!manifest.to_string().contains("${{"), "no placeholder left");

    assert_eq!(png_header(file("color.png")), (192, 192, 2));
    // 32×32 RGBA: white on transparent.
    assert_eq!(png_header(file("outline.png")), (32, 32, 6));
}

#[test]
fn teams_package_takes_the_app_id_from_the_settings() {
    let sb = Sandbox::new();
    let run = sb.strands_env(&[("TEAMS_APP_ID", APP)], &["teams", "package"]);
    run.expect_code(0);
    let files = unzip(&sb.path().join("strands-teams-app.zip"));
    let manifest: Value = serde_json::from_slice(&files[0].1).expect("JSON");
    assert_eq!(manifest["bots"][0]["botId"], APP);
    assert_eq!(manifest["id"], APP);
}

#[test]
fn teams_package_without_an_app_id_is_a_usage_error() {
    let sb = Sandbox::new();
    let run = sb.strands_env(&[("TEAMS_APP_ID", " ")], &["teams", "package"]);
    run.expect_code(2);
    assert!(run.stderr.contains("--app-id"), "{}", run.stderr);
    assert!(run.stderr.contains("TEAMS_APP_ID"), "{}", run.stderr);
    assert!(!sb.path().join("strands-teams-app.zip").exists());

    let run = sb.strands_env(&[], &["teams", "package", "--app-id", "not-a-guid"]);
    run.expect_code(2);
    assert!(run.stderr.contains("not a GUID"), "{}", run.stderr);
    assert!(!sb.path().join("strands-teams-app.zip").exists());
}
