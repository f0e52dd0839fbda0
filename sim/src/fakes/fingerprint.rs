//! SSH key fingerprints as Hetzner and DigitalOcean show and filter by them: the MD5 digest of the decoded key blob,
//! as colon-separated hex (`ssh-keygen -l -E md5`). MD5 and base64 are implemented here so
//! the fake needs no extra dependency; neither protects anything.

/// The MD5 fingerprint of an OpenSSH public key line, or `None` when it is not one.
pub(crate) fn md5_fingerprint(public_key: &str) -> Option<String> {
    let mut parts = public_key.split_whitespace();
    let kind = parts.next()?;
    let blob = base64_decode(parts.next()?)?;
    // The blob starts with the key type as an SSH string.
    let len = u32::from_be_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    if blob.get(4..4 + len)? != kind.as_bytes() || blob.len() <= 4 + len {
        return None;
    }
    let digest = md5(&blob);
    Some(
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":"),
    )
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let trimmed = s.trim_end_matches('=');
    if !s.len().is_multiple_of(4) || s.len() - trimmed.len() > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in trimmed.bytes() {
        acc = acc << 6 | u32::from(value(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// RFC 1321.
fn md5(input: &[u8]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    let k: Vec<u32> = (0..64)
        .map(|i| ((i as f64 + 1.0).sin().abs() * 4_294_967_296.0) as u32)
        .collect();
    let mut msg = input.to_vec();
    let bit_len = (input.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_le_bytes());
    let mut h: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    for chunk in msg.chunks(64) {
        let m: Vec<u32> = chunk
            .chunks(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let [mut a, mut b, mut c, mut d] = h;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let rotated = a
                .wrapping_add(f)
                .wrapping_add(k[i])
                .wrapping_add(m[g])
                .rotate_left(S[i]);
            (a, d, c) = (d, c, b);
            b = b.wrapping_add(rotated);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 16];
    for (i, word) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_matches_the_rfc_test_vectors() {
        let hex = |d: [u8; 16]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(md5(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(md5(b"abc")), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(hex(md5(&[b'a'; 100])), "36a92cc94a9e0fa21f625f8bfb007adf");
    }

    #[test]
    fn fingerprints_match_ssh_keygen_and_need_a_well_formed_key() {
        // `ssh-keygen -l -E md5` of this key: MD5:40:5b:21:57:6c:01:36:75:f7:07:17:51:a8:ea:a6:55
        let key =
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIJ5/QfDr1FPkihNNq4p2RtlqdVkTBE5D2MjaU6HcDzl demo";
        assert_eq!(
            md5_fingerprint(key).as_deref(),
            Some("40:5b:21:57:6c:01:36:75:f7:07:17:51:a8:ea:a6:55")
        );
        assert_eq!(
            md5_fingerprint(
                "ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIIJ5/QfDr1FPkihNNq4p2RtlqdVkTBE5D2MjaU6HcDzl"
            ),
            None
        );
        assert_eq!(md5_fingerprint("ssh-ed25519 not-base64"), None);
    }
}
