//! Delete conditions (`__commits/<t>_<t>_<uuid>_22.del`): filled in below.
