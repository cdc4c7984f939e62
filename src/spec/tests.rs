use std::path::Path;

#[test]
fn probe() {
    let dir = std::env::var("PROBE_DIR").unwrap_or_default();
    if dir.is_empty() {
        return;
    }
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for p in names {
        let text = std::fs::read_to_string(&p).unwrap();
        match crate::spec::parse(&text, Path::new("f.yaml")) {
            Ok(s) => eprintln!("== {}: OK {:?}", p.display(), s.pattern),
            Err(crate::Error::Spec(d)) => {
                eprintln!("== {}:", p.display());
                for x in d {
                    eprintln!(
                        "   {}:{} {} | hint={:?}",
                        x.line, x.column, x.message, x.hint
                    );
                }
            }
            Err(e) => eprintln!("== {}: {:?} code={}", p.display(), e, e.exit_code()),
        }
    }
}
