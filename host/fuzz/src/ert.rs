//! `ert`: the xocl ERT command-packet decoders on arbitrary words. The input is read as
//! little-endian u32 words (a trailing partial word is dropped). Every word goes through
//! [`ErtHeader::decode`], which must be undone by [`ErtHeader::encode`]; the whole packet goes
//! through [`StartCu::decode`], whose accepted packets must survive an encode and a decode.

use accelhost::families::xocl::abi::{
    ERT_MAX_CU_MASKS, ERT_REGMAP_SKIPPED_WORDS, ErtHeader, ErtOpcode, ErtState, ErtType, MAX_CUS,
    StartCu,
};

/// The little-endian u32 words of `data`.
pub fn words(data: &[u8]) -> Vec<u32> {
    data.as_chunks::<4>()
        .0
        .iter()
        .map(|w| u32::from_le_bytes(*w))
        .collect()
}

/// Decodes `data` as a packet, and each of its words as a header.
pub fn run(data: &[u8]) {
    let words = words(data);
    for &word in &words {
        let header = ErtHeader::decode(word);
        assert_eq!(header.encode(), word, "header fields cover all 32 bits");
        let _ = (header.extra_cu_masks(), header.stat_enabled());
        let _ = ErtState::from_raw(header.state);
        let _ = ErtOpcode::from_raw(header.opcode);
        let _ = ErtType::from_raw(header.kind);
    }

    match StartCu::decode(&words) {
        Ok(packet) => {
            assert!((1..=ERT_MAX_CU_MASKS).contains(&packet.cu_masks.len()));
            assert!(packet.regmap.len() >= ERT_REGMAP_SKIPPED_WORDS);
            assert_eq!(
                packet.arg_words().len(),
                packet.regmap.len() - ERT_REGMAP_SKIPPED_WORDS
            );
            let cus: Vec<u32> = packet.cu_indices().collect();
            assert!(!cus.is_empty(), "an accepted packet names a CU");
            assert!(cus.iter().all(|&cu| cu < MAX_CUS));
            assert!(cus.windows(2).all(|w| w[0] < w[1]), "CU indices increase");
            let again = StartCu::decode(&packet.encode()).expect("an encoded packet decodes");
            assert_eq!(again, packet);
        }
        Err(err) => {
            let _ = err.to_string();
        }
    }
}
