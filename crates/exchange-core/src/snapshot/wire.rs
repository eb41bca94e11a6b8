//! The encoding's primitives: little-endian integers, optional values,
//! short texts, the codes of order enums, and one open order's fields.

use exchange_types::{AssetCode, ClientOrderId, SelfTradePrevention, Side, Symbol, TimeInForce};

use super::SnapshotError;
use crate::orders::{Order, NIL};

pub(crate) struct Writer(pub(super) Vec<u8>);

impl Writer {
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.u64(v);
            }
        }
    }
    pub(crate) fn text(&mut self, bytes: &[u8]) {
        self.u8(bytes.len() as u8);
        self.0.extend_from_slice(bytes);
    }
}

pub(crate) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], SnapshotError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or(SnapshotError::Truncated(self.at))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, SnapshotError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32, SnapshotError> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(b))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, SnapshotError> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }
    pub(crate) fn i32(&mut self) -> Result<i32, SnapshotError> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(i32::from_le_bytes(b))
    }
    pub(crate) fn opt_u64(&mut self) -> Result<Option<u64>, SnapshotError> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.u64()?)),
            _ => Err(SnapshotError::Invalid("option tag")),
        }
    }
    pub(crate) fn text(&mut self) -> Result<&'a str, SnapshotError> {
        let len = usize::from(self.u8()?);
        std::str::from_utf8(self.take(len)?).map_err(|_| SnapshotError::Invalid("text"))
    }
    pub(crate) fn symbol(&mut self) -> Result<Symbol, SnapshotError> {
        Symbol::new(self.text()?).map_err(|_| SnapshotError::Invalid("symbol"))
    }
    pub(crate) fn asset(&mut self) -> Result<AssetCode, SnapshotError> {
        AssetCode::new(self.text()?).map_err(|_| SnapshotError::Invalid("asset"))
    }
    pub(crate) fn client_order_id(&mut self) -> Result<ClientOrderId, SnapshotError> {
        ClientOrderId::new(self.text()?).map_err(|_| SnapshotError::Invalid("client order id"))
    }
    /// Steps over the tag of an optional section if that section is next.
    pub(super) fn next_is(&mut self, tag: u8) -> bool {
        let found = self.bytes.get(self.at) == Some(&tag);
        if found {
            self.at += 1;
        }
        found
    }
    pub(crate) fn count(&mut self, limit: usize) -> Result<usize, SnapshotError> {
        let n = self.u64()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= limit)
            .ok_or(SnapshotError::Invalid("count"))
    }
}

pub(crate) fn side_code(side: Side) -> u8 {
    match side {
        Side::Buy => 0,
        Side::Sell => 1,
    }
}

pub(crate) fn tif_code(tif: TimeInForce) -> u8 {
    match tif {
        TimeInForce::Gtc => 0,
        TimeInForce::Ioc => 1,
        TimeInForce::Fok => 2,
        TimeInForce::Day => 3,
        TimeInForce::Gtd => 4,
        TimeInForce::AtOpen => 5,
        TimeInForce::AtClose => 6,
    }
}

pub(crate) fn stp_code(stp: SelfTradePrevention) -> u8 {
    match stp {
        SelfTradePrevention::CancelNewest => 0,
        SelfTradePrevention::CancelOldest => 1,
        SelfTradePrevention::CancelBoth => 2,
        SelfTradePrevention::Decrement => 3,
    }
}

/// One open order's fields, as both the book and the stop sections write
/// them.
pub(crate) fn write_order(w: &mut Writer, o: &Order, iceberg: bool) {
    w.u64(o.id);
    w.u32(o.account);
    w.u32(o.instrument);
    w.u8(side_code(o.side));
    w.u8(tif_code(o.tif));
    w.u8(stp_code(o.stp));
    w.u8(u8::from(o.post_only) | (u8::from(iceberg) << 1) | (u8::from(o.is_hidden) << 2));
    w.u64(o.price);
    w.u64(o.qty);
    w.u64(o.filled);
    w.u64(o.reserved);
    w.text(o.client_order_id.as_bytes());
}

/// An order and whether its flags mark it an iceberg.
pub(crate) fn read_order(r: &mut Reader) -> Result<(Order, bool), SnapshotError> {
    let id = r.u64()?;
    let account = r.u32()?;
    let instrument = r.u32()?;
    let side = match r.u8()? {
        0 => Side::Buy,
        1 => Side::Sell,
        _ => return Err(SnapshotError::Invalid("side")),
    };
    let tif = match r.u8()? {
        0 => TimeInForce::Gtc,
        1 => TimeInForce::Ioc,
        2 => TimeInForce::Fok,
        3 => TimeInForce::Day,
        4 => TimeInForce::Gtd,
        5 => TimeInForce::AtOpen,
        6 => TimeInForce::AtClose,
        _ => return Err(SnapshotError::Invalid("time in force")),
    };
    let stp = match r.u8()? {
        0 => SelfTradePrevention::CancelNewest,
        1 => SelfTradePrevention::CancelOldest,
        2 => SelfTradePrevention::CancelBoth,
        3 => SelfTradePrevention::Decrement,
        _ => return Err(SnapshotError::Invalid("self-trade prevention")),
    };
    let flags = r.u8()?;
    if flags > 7 {
        return Err(SnapshotError::Invalid("order flags"));
    }
    let post_only = flags & 1 == 1;
    let iceberg = flags & 2 != 0;
    let order = Order {
        id,
        account,
        instrument,
        side,
        tif,
        stp,
        post_only,
        is_market: false,
        // Bit 2: a hidden order, which rests on its book's hidden side.
        is_hidden: flags & 4 != 0,
        // The midpoint section marks its own orders.
        is_midpoint: false,
        price: r.u64()?,
        qty: r.u64()?,
        filled: r.u64()?,
        reserved: r.u64()?,
        hidden: 0,
        client_order_id: r.client_order_id()?,
        indexed: false,
        stop: false,
        oco: false,
        account_prev: NIL,
        account_next: NIL,
    };
    Ok((order, iceberg))
}
