//! A fix keeps the extended attributes of the files it rewrites (ACLs,
//! SELinux labels, `user.*` attributes), as it keeps mode and owner.

use crate::support::{align, drifted_fleet, read};

#[test]
fn a_rewritten_manifest_keeps_its_extended_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = drifted_fleet(&root, 2).unwrap();
    let manifest = fleet.manifest("c0000");
    let before = read(&manifest);
    match rustix::fs::setxattr(
        &manifest,
        "user.xtask-test",
        b"kept",
        rustix::fs::XattrFlags::empty(),
    ) {
        Ok(()) => {}
        // the only skip: a file system without user attributes (an old
        // tmpfs); then this test cannot tell, and says so
        Err(e) if e == rustix::io::Errno::NOTSUP || e == rustix::io::Errno::OPNOTSUPP => {
            eprintln!(
                "SKIPPED the assertion: {} has no user extended attributes ({e})",
                root.display()
            );
            return;
        }
        Err(e) => panic!("setxattr: {e}"),
    }
    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_ne!(read(&manifest), before, "the manifest was rewritten");
    let mut value = [0u8; 16];
    let n = rustix::fs::getxattr(&manifest, "user.xtask-test", &mut value[..])
        .expect("the attribute survives the rewrite");
    assert_eq!(&value[..n], b"kept");
}
